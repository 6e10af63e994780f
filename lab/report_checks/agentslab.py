"""A run of agents.sh as the checks read it (AgentsLab), the agents and their adapters (AGENTS), and
the helpers of times: btmon's stamps, a log line's, an interval's day."""
import datetime, functools, json, re, subprocess
import onair
from labframe import Lab
from .bounds import REPROGRAMMED_AT_MOST


AGENTS = {"a": "hci0", "b": "hci1"}
# The phases that disturbed the radio: the other's RPIs within PHASE_MARGIN of them are not counted.
DISTURBANCES = ("bluetoothd-killed", "a-killed", "b-paused", "a-switched-off", "second-advertiser", "second-advertiser-off",
                "a-connectable", "a-not-connectable", "unplugged", "replugged", "suspended", "resumed", "rfkill-blocked", "rfkill-unblocked")
# The moments an adapter is taken from under the agents: an advertisement requested just then may
# meet the block or the power-off (Rejected, Failed) and is not counted as refused.
TAKEN_AWAY = ("a-switched-off", "rfkill-blocked", "unplugged", "suspended")


class AgentsLab(Lab):
    """A run of agents.sh, with what several checks derive from it."""

    def __init__(self, folder, enctl):
        super().__init__(folder)
        self.enctl = enctl

    def keys(self, agent):
        return self.rows(agent, "SELECT key_data, rolling_start_interval_number, rolling_period FROM temporary_exposure_key")

    def derived(self, key, start, period):
        """The RPIs of one key by `enctl derive`."""
        result = subprocess.run([self.enctl, "derive", "--tek", key, "--interval", str(start), "--count", str(period), "--json"],
                                check=True, capture_output=True, text=True)
        return {row["rpi"] for row in json.loads(result.stdout)}

    @functools.cached_property
    def own(self):
        """Each agent's RPIs, derived from its stored keys."""
        return {agent: set().union(*(self.derived(key.hex(), start, period) for key, start, period in self.keys(agent))) for agent in AGENTS}

    @functools.cached_property
    def phones(self):
        """The lab's phones and crowd (phones.py): one line per advertisement."""
        return [json.loads(line) for line in self.lines("phones.jsonl")] if self.exists("phones.jsonl") else []

    @functools.cached_property
    def phone_rpis(self):
        return {p["rpi"] for p in self.phones if p["wellFormed"]}

    @functools.cached_property
    def en_capture(self):
        """The RPI table of every agent key, and the agents' EN advertisements in the capture."""
        keys = [tuple(row) for agent in AGENTS for row in self.keys(agent)]
        return onair.identifiers(keys), onair.advertisements(self.snoop, controllers={0, 1})

    @functools.cache
    def withdrawals(self, controller):
        return onair.withdrawals(self.snoop, controller)

    @functools.cached_property
    def connectable_moment(self):
        """When hci0 turned connectable under a (None if the phase did not run), and each EN advertisement
        the kernel then put on the air off the specification, with the seconds until a took it off."""
        if not self.has("a-connectable"):
            return None, []
        at = self.at("a-connectable")
        table, (found, *_) = self.en_capture
        reprogrammed = []
        for advertisement in found:
            moment = onair.unix_seconds(advertisement["time"])
            if advertisement["controller"] == 0 and at - 0.5 <= moment <= at + 2 and onair.check(advertisement, table):
                off = next((withdrawn for withdrawn in self.withdrawals(0) if withdrawn >= moment), None)
                reprogrammed.append((advertisement, None if off is None else off - moment))
        return at, reprogrammed

    def excused_at_connectable(self):
        """The re-programmed advertisements that a took off within REPROGRAMMED_AT_MOST."""
        return [advertisement for advertisement, took in self.connectable_moment[1] if took is not None and took <= REPROGRAMMED_AT_MOST]

    @functools.cached_property
    def reenabled_at_resume(self):
        """The EN advertisements the kernel put on hci0's air again at the lab's resume with the RPI
        on the air before the sleep, each with the seconds from a's continuing (or the advertisement,
        if later) until a took it off (None: never). Before a continued, it could do nothing."""
        if not self.has("suspended"):
            return []
        suspended, resumed = self.at("suspended"), self.at("resumed")
        table, (found, *_) = self.en_capture
        mine = [advertisement for advertisement in found if advertisement["controller"] == 0]
        before = [advertisement for advertisement in mine if onair.unix_seconds(advertisement["time"]) < suspended]
        if not before:
            return []
        again = []
        for advertisement in mine:
            moment = onair.unix_seconds(advertisement["time"])
            if suspended <= moment <= resumed + 2 and advertisement["data"][11:27] == before[-1]["data"][11:27]:
                off = next((withdrawn for withdrawn in self.withdrawals(0) if withdrawn >= moment), None)
                again.append((advertisement, None if off is None else off - max(moment, resumed)))
        return again

    def back_on_air(self, controller, gone_at, back_at):
        """The controller's first EN advertisement on the specification from `back_at` on (None if
        none), and whether it carries a new RPI from a new address against the last one before `gone_at`."""
        table, (found, *_) = self.en_capture
        mine = [advertisement for advertisement in found if advertisement["controller"] == controller and not onair.check(advertisement, table)]
        before = [advertisement for advertisement in mine if onair.unix_seconds(advertisement["time"]) < gone_at]
        back = next((advertisement for advertisement in mine if onair.unix_seconds(advertisement["time"]) >= back_at), None)
        fresh = back is not None and bool(before) and back["data"][11:27] != before[-1]["data"][11:27] and back["address"] != before[-1]["address"]
        return back, fresh

    def returned(self, controller, gone_at, back_at):
        """Seconds from `back_at` until the controller had an EN advertisement on the specification on
        the air and scanned again (None if it did not), and whether that advertisement is a new RPI from
        a new address against the last one before `gone_at` (back_on_air)."""
        back, fresh = self.back_on_air(controller, gone_at, back_at)
        scanning = next((moment for moment, _, listening in onair.radio_changes(self.snoop, controller) if moment >= back_at and listening), None)
        took = None if back is None or scanning is None else max(onair.unix_seconds(back["time"]), scanning) - back_at
        return took, fresh, back

    @functools.cached_property
    def phase_moments(self):
        """The unix times at which the lab's phases disturbed the radio."""
        return [entry["realtime"] for name in DISTURBANCES for entry in self.entries(name)]

    def on_air_spans(self, controller):
        """(start, end, RPI) of each EN advertisement the controller was given, in unix times: from its
        data (or, on a legacy controller, the enable) to the next one or the first withdrawal after it."""
        table, (found, *_) = self.en_capture
        given = sorted((onair.unix_seconds(advertisement["time"]), advertisement["data"][11:27].hex())
                       for advertisement in found if advertisement["controller"] == controller)
        spans = []
        for index, (start, rpi) in enumerate(given):
            following = given[index + 1][0] if index + 1 < len(given) else float("inf")
            spans.append((start, min([following] + [moment for moment in self.withdrawals(controller) if moment > start][:1]), rpi))
        return spans

    @functools.cached_property
    def bluetoothd_restart(self):
        """Per adapter, (seconds from the restarted bluetoothd's start until it offered the adapter
        again, seconds from then to the agent's first successful advertisement and scan, the time
        of day it offered it), from btmon's trace of the management commands (the radio's own
        record: polling bluetoothd's properties can see stale kernel state just after a restart).
        bluetoothd offers an adapter for advertising once its own Read Advertising Features for it
        is done; in the emulated guest, with six controllers to set up, that alone can take over 10 s."""
        lines = self.text("btmon.txt").splitlines()
        starts = [i for i, line in enumerate(lines) if "bluetoothd: Bluetooth daemon" in line]
        if len(starts) < 2:
            return {}
        started = btmon_seconds(lines[starts[-1]].split()[-1])
        socket = next((re.search(r"\{0x\w+\}", line).group(0) for line in lines[starts[-1]:] if line.startswith("@ MGMT Open: bluetoothd")), None)
        ready, first = {}, {}
        for i in range(starts[-1], len(lines) - 2):
            offered = re.match(r"@ MGMT Command: Read Adverti.. \(0x003d\) plen 0\s+(\{0x\w+\}) \[(hci\d)\] (\S+)$", lines[i])
            if offered and offered.group(1) == socket:
                ready.setdefault(offered.group(2), btmon_seconds(offered.group(3)))
            event = re.match(r"@ MGMT Event: Command Complete .*\[(hci\d)\] (\S+)$", lines[i])
            if not event or "Status: Success" not in lines[i + 2]:
                continue
            kind = ("advertising" if re.search(r"Add (Extended )?Advertising( Data)? \(", lines[i + 1])
                    else "scanning" if re.search(r"Start Service Discovery|Add Advertisement Patterns Monitor", lines[i + 1]) else None)
            if kind and event.group(1) in ready:
                first.setdefault(event.group(1), {}).setdefault(kind, btmon_seconds(event.group(2)))
        return {adapter: (ready[adapter] - started, max(kinds.values()) - ready[adapter], ready[adapter])
                for adapter, kinds in first.items() if len(kinds) == 2}

    def refused_advertisements(self, agent):
        """The agent's log lines of advertisements the kernel refused (issue 25 began with 37 of them
        on legacy controllers), but in the seconds an adapter was taken away."""
        moments = [entry["realtime"] for name in TAKEN_AWAY for entry in self.entries(name)]
        refused = []
        for line in self.lines(f"{agent}/enagentd.log"):
            if re.search(r"cannot advertise: hci\d+ refused", line):
                logged = logged_at(line)
                if not any(moment - 1 <= logged <= moment + 2 for moment in moments):
                    refused.append(line.strip())
        return refused


def btmon_seconds(stamp):
    hours, minutes, rest = stamp.split(":")
    return int(hours) * 3600 + int(minutes) * 60 + float(rest)


def day_of(interval):
    return datetime.datetime.fromtimestamp(interval * 600, datetime.timezone.utc).strftime("%Y-%m-%d")


logged_at = onair.logged_at
