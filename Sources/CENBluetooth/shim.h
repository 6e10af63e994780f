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

#endif
