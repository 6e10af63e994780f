#!/usr/bin/env python3
"""callers.py BUS: what the bus policy lets this process's user call on enagentd's API at BUS,
as JSON {member: "allowed" | "denied"}. Every method and Properties.Set is called with seven
int32s, a signature no method takes: a call the policy lets through is answered InvalidArgs by
the daemon (and changes nothing), one it stops is answered AccessDenied by dbus-daemon. Get and
GetAll are called properly."""
import json, re, sys
import dbus

NAME = PATH = "org.enagent.ExposureNotification1"
PATH = "/org/enagent/ExposureNotification1"
bus = dbus.bus.BusConnection(sys.argv[1])
proxy = bus.get_object(NAME, PATH, introspect=False)
xml = proxy.Introspect(dbus_interface="org.freedesktop.DBus.Introspectable")
interface = xml.split(f'<interface name="{NAME}">')[1].split("</interface>")[0]
answers = {}


def outcome(call):
    try:
        call()
        return "allowed"
    except dbus.exceptions.DBusException as error:
        return "denied" if error.get_dbus_name() in ("org.freedesktop.DBus.Error.AccessDenied",
                                                      f"{NAME}.Error.NotAuthorized") else "allowed"


wrong = [dbus.Int32(7)] * 7
for member in re.findall(r'<method name="(\w+)"', interface):
    answers[member] = outcome(lambda: proxy.get_dbus_method(member, NAME)(*wrong))
answers["Properties.Get"] = outcome(lambda: proxy.Get(NAME, "Status", dbus_interface="org.freedesktop.DBus.Properties"))
answers["Properties.GetAll"] = outcome(lambda: proxy.GetAll(NAME, dbus_interface="org.freedesktop.DBus.Properties"))
answers["Properties.Set"] = outcome(lambda: proxy.get_dbus_method("Set", "org.freedesktop.DBus.Properties")(*wrong))
print(json.dumps(answers))
