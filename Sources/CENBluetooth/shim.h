#ifndef CENBLUETOOTH_SHIM_H
#define CENBLUETOOTH_SHIM_H
#include <sys/socket.h>
#include <bluetooth/bluetooth.h>
#include <bluetooth/hci.h>
#include <bluetooth/hci_lib.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <poll.h>

/* HCI LE Read Advertising Physical Channel Tx Power on the adapter named `adapter` (hci0):
   0 and the level in dBm, a negative errno when the controller cannot be asked (no
   AF_BLUETOOTH, no such adapter, no CAP_NET_RAW), or the controller's positive HCI status. */
static inline int cen_le_read_advertising_tx_power(const char *adapter, int8_t *level) {
    int id = hci_devid(adapter);
    if (id < 0) return -ENODEV;
    int device = hci_open_dev(id);
    if (device < 0) return -errno;
    le_read_advertising_channel_tx_power_rp reply;
    memset(&reply, 0, sizeof reply);
    struct hci_request request;
    memset(&request, 0, sizeof request);
    request.ogf = OGF_LE_CTL;
    request.ocf = OCF_LE_READ_ADVERTISING_CHANNEL_TX_POWER;
    request.rparam = &reply;
    request.rlen = LE_READ_ADVERTISING_CHANNEL_TX_POWER_RP_SIZE;
    int result = hci_send_req(device, &request, 1000);
    int error = errno;
    hci_close_dev(device);
    if (result < 0) return -error;
    if (reply.status != 0) return reply.status;
    *level = (int8_t)reply.level;
    return 0;
}

/* Stops the LE discovery the kernel runs on controller `index` through the management socket
   (needs CAP_NET_ADMIN): after bluetoothd dies mid-discovery the kernel keeps scanning for up to
   10.24 s and answers the next bluetoothd's Start Discovery with Busy. 0 when stopped, a negative
   errno when the socket cannot be used, or the positive management status. */
static inline int cen_mgmt_stop_le_discovery(uint16_t index) {
    int sock = socket(PF_BLUETOOTH, SOCK_RAW | SOCK_CLOEXEC, BTPROTO_HCI);
    if (sock < 0) return -errno;
    struct sockaddr_hci address;
    memset(&address, 0, sizeof address);
    address.hci_family = AF_BLUETOOTH;
    address.hci_dev = HCI_DEV_NONE;
    address.hci_channel = HCI_CHANNEL_CONTROL;
    if (bind(sock, (struct sockaddr *)&address, sizeof address) < 0) { int error = errno; close(sock); return -error; }
    /* Stop Discovery (0x0024), address types LE public | LE random. */
    uint8_t command[7] = { 0x24, 0x00, (uint8_t)index, (uint8_t)(index >> 8), 0x01, 0x00, 0x06 };
    if (write(sock, command, sizeof command) != (ssize_t)sizeof command) { int error = errno; close(sock); return -error; }
    for (int attempt = 0; attempt < 64; attempt++) {
        struct pollfd poller = { .fd = sock, .events = POLLIN };
        if (poll(&poller, 1, 1000) != 1) { close(sock); return -ETIMEDOUT; }
        uint8_t event[512];
        ssize_t count = read(sock, event, sizeof event);
        if (count < 0) { int error = errno; close(sock); return -error; }
        /* Command Complete (0x0001) or Command Status (0x0002) for our opcode on our controller. */
        uint16_t code = event[0] | event[1] << 8, on = event[2] | event[3] << 8;
        if (count >= 9 && (code == 0x0001 || code == 0x0002) && on == index && (event[6] | event[7] << 8) == 0x0024) {
            close(sock);
            return event[8];
        }
    }
    close(sock);
    return -EPROTO;
}
#endif
