#ifndef CENSYSTEMD_SHIM_H
#define CENSYSTEMD_SHIM_H
#include <systemd/sd-daemon.h>
#include <systemd/sd-journal.h>
#endif
