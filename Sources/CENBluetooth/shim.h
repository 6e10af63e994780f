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
#include <time.h>
#include <byteswap.h>
#include <sys/ioctl.h>
#include <linux/filter.h>

/* HCI LE Read Advertising Physical Channel Tx Power on the adapter named `adapter` (hci0),
   answered within `timeout` milliseconds: 0 and the level in dBm, a negative errno when the
   controller cannot be asked (no AF_BLUETOOTH, no such adapter, no CAP_NET_RAW) or did not answer
   in time (-ETIMEDOUT), or the controller's positive HCI status. Not libbluetooth's hci_send_req:
   its filter passes every LE Meta event, and it gives up after ten events that are not the
   answer, which a crowd's advertising reports are within milliseconds ("Connection timed out"
   24 ms after the question, make test of 2026-12-01 08:20). This socket's filter passes only the
   command's own Command Complete and Command Status. */
static inline int cen_le_read_advertising_tx_power(const char *adapter, int timeout, int8_t *level) {
    int id = hci_devid(adapter);
    if (id < 0) return -ENODEV;
    int device = hci_open_dev(id);
    if (device < 0) return -errno;
    uint16_t opcode = htobs(cmd_opcode_pack(OGF_LE_CTL, OCF_LE_READ_ADVERTISING_CHANNEL_TX_POWER));
    struct hci_filter filter;
    hci_filter_clear(&filter);
    hci_filter_set_ptype(HCI_EVENT_PKT, &filter);
    hci_filter_set_event(EVT_CMD_COMPLETE, &filter);
    hci_filter_set_event(EVT_CMD_STATUS, &filter);
    hci_filter_set_opcode(opcode, &filter);
    int result = -ETIMEDOUT;
    if (setsockopt(device, SOL_HCI, HCI_FILTER, &filter, sizeof filter) < 0 ||
        hci_send_cmd(device, OGF_LE_CTL, OCF_LE_READ_ADVERTISING_CHANNEL_TX_POWER, 0, NULL) < 0) {
        result = -errno;
        hci_close_dev(device);
        return result;
    }
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (;;) {
        clock_gettime(CLOCK_MONOTONIC, &now);
        long left = timeout - ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000);
        if (left <= 0) break;
        struct pollfd readable = { .fd = device, .events = POLLIN };
        int ready = poll(&readable, 1, (int)left);
        if (ready < 0 && errno == EINTR) continue;
        if (ready <= 0) { result = ready < 0 ? -errno : -ETIMEDOUT; break; }
        unsigned char buffer[HCI_MAX_EVENT_SIZE];
        ssize_t count = read(device, buffer, sizeof buffer);
        if (count < 0) { if (errno == EINTR || errno == EAGAIN) continue; result = -errno; break; }
        if (count < 1 + HCI_EVENT_HDR_SIZE || buffer[0] != HCI_EVENT_PKT) continue;
        hci_event_hdr *header = (hci_event_hdr *)(buffer + 1);
        unsigned char *parameters = buffer + 1 + HCI_EVENT_HDR_SIZE;
        ssize_t length = count - 1 - HCI_EVENT_HDR_SIZE;
        if (header->evt == EVT_CMD_STATUS && length >= EVT_CMD_STATUS_SIZE) {
            evt_cmd_status *status = (evt_cmd_status *)parameters;
            if (status->opcode != opcode || status->status == 0) continue;
            result = status->status;
            break;
        }
        if (header->evt == EVT_CMD_COMPLETE && length >= EVT_CMD_COMPLETE_SIZE + LE_READ_ADVERTISING_CHANNEL_TX_POWER_RP_SIZE) {
            evt_cmd_complete *complete = (evt_cmd_complete *)parameters;
            if (complete->opcode != opcode) continue;
            le_read_advertising_channel_tx_power_rp *reply = (le_read_advertising_channel_tx_power_rp *)(parameters + EVT_CMD_COMPLETE_SIZE);
            if (reply->status != 0) { result = reply->status; break; }
            *level = (int8_t)reply->level;
            result = 0;
            break;
        }
    }
    hci_close_dev(device);
    return result;
}

/* Whether the kernel is making an LE connection on controller `index`: 1 when its connection list
   (HCIGETCONNLIST, which asks for no capability) holds an LE link in BT_CONNECT, else 0, or a
   negative errno (no AF_BLUETOOTH, no such controller). */
#define CEN_LE_LINK 0x80  /* the kernel's LE link type (include/net/bluetooth/hci.h), not in libbluetooth's */
static inline int cen_le_connection_being_made(uint16_t index) {
    int sock = socket(AF_BLUETOOTH, SOCK_RAW | SOCK_CLOEXEC, BTPROTO_HCI);
    if (sock < 0) return -errno;
    struct { struct hci_conn_list_req request; struct hci_conn_info info[64]; } list;
    memset(&list, 0, sizeof list);
    list.request.dev_id = index;
    list.request.conn_num = 64;
    int result = ioctl(sock, HCIGETCONNLIST, &list);
    int error = errno;
    close(sock);
    if (result < 0) return -error;
    for (int i = 0; i < list.request.conn_num; i++)
        if (list.info[i].type == CEN_LE_LINK && list.info[i].state == BT_CONNECT) return 1;
    return 0;
}

/* A socket filter on a management socket (doc/mgmt-api.txt: opcode, controller index, length,
   little-endian): the kernel queues every event and reply but the reports (Device Found 0x0012,
   Advertisement Monitor Device Found 0x002F) of controllers other than `controller`, which it
   drops before they reach the socket (hci_sock.c __hci_send_to_channel: sock_queue_rcv_skb runs
   the filter). A classic BPF load reads the two bytes big-endian, hence the swapped constants.
   0, or -errno. */
static inline int cen_management_pass_reports_of(int socket, uint16_t controller) {
    struct sock_filter code[] = {
        BPF_STMT(BPF_LD | BPF_H | BPF_ABS, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, bswap_16(0x0012), 1, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, bswap_16(0x002F), 0, 2),
        BPF_STMT(BPF_LD | BPF_H | BPF_ABS, 2),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, bswap_16(controller), 0, 1),
        BPF_STMT(BPF_RET | BPF_K, 0xFFFFFFFF),
        BPF_STMT(BPF_RET | BPF_K, 0),
    };
    struct sock_fprog program = { .len = sizeof code / sizeof code[0], .filter = code };
    return setsockopt(socket, SOL_SOCKET, SO_ATTACH_FILTER, &program, sizeof program) == 0 ? 0 : -errno;
}

#endif
