#!/usr/bin/env python3
"""cpushare.py FILE [INTERVAL]: where the guest's processor time goes, sampled every INTERVAL
seconds (10) into FILE, a JSON line each: the kernel's counters of /proc/stat (jiffies of user,
system, irq, softirq and idle, both processors together) and each process's user and system
jiffies by its command name. Run it in the background in the guest; `summary` reads the file on
the host (the reports print it as figures, not as a check): under a crowd the emulated guest fell
minutes behind, and this says whose work it was."""
import json, os, sys, time

STAT_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq")


def sample():
    with open("/proc/stat") as stat:
        cpu = dict(zip(STAT_FIELDS, map(int, stat.readline().split()[1:8])))
    processes = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as stat:
                text = stat.read()
        except OSError:
            continue
        name, rest = text[text.index("(") + 1:text.rindex(")")], text[text.rindex(")") + 2:].split()
        # Fields 14 and 15 (utime, stime) of proc(5), counted from the state (field 3).
        processes[f"{name}[{pid}]"] = int(rest[11]) + int(rest[12])
    return {"at": time.time(), "cpu": cpu, "processes": processes}


def summary(path):
    """Lines of figures: the share of the guest's processor time the kernel, user programs and idle
    had between the first and last samples, and the busiest processes."""
    with open(path) as lines:
        samples = [json.loads(line) for line in lines if line.strip()]
    if len(samples) < 2:
        return [f"fewer than two samples in {os.path.basename(path)}"]
    first, last = samples[0], samples[-1]
    spent = {field: last["cpu"][field] - first["cpu"][field] for field in STAT_FIELDS}
    total = sum(spent.values()) or 1
    lines = [f"over {last['at'] - first['at']:.0f} s: " + ", ".join(f"{field} {100 * spent[field] / total:.0f}%"
                                                            for field in ("user", "system", "softirq", "irq", "iowait", "idle"))]
    busiest = sorted(((last["processes"][name] - first["processes"].get(name, 0), name) for name in last["processes"]), reverse=True)[:8]
    lines.append("busiest: " + ", ".join(f"{name} {100 * jiffies / total:.0f}%" for jiffies, name in busiest if jiffies > 0))
    return lines


if __name__ == "__main__":
    path, interval = sys.argv[1], float(sys.argv[2]) if len(sys.argv) > 2 else 10
    while True:
        with open(path, "a") as out:
            out.write(json.dumps(sample()) + "\n")
        time.sleep(interval)
