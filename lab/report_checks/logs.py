"""What the agents logged: no key or RPI, the TX power the controller advertises at (selected by it,
or its channel's read from it when it selects none), no refused advertisement."""
import re
from .agentslab import AGENTS


def logs(lab, fail):
    for agent, adapter in AGENTS.items():
        log = lab.text(f"{agent}/enagentd.log").lower()
        secrets = [key.hex() for (key,) in lab.rows(agent, "SELECT key_data FROM temporary_exposure_key")] + sorted(lab.own[agent])
        leaked = [secret for secret in secrets if secret in log]
        power = re.search(r"advertising tx power (-?\d+) dbm, ((?:read from|selected by) \w+)", log)
        print(f"  {agent}: {len(log.splitlines())} lines, {len(leaked)} of its {len(secrets)} TEKs and RPIs in them; "
              f"TX power {power.group(1) + ' dBm, ' + power.group(2) if power else 'not logged'}")
        if leaked:
            fail(f"agent {agent}'s log carries {len(leaked)} TEKs or RPIs")
        if not power or power.group(2) not in (f"read from {adapter}", f"selected by {adapter}"):
            fail(f"agent {agent} did not take its TX power from {adapter}")
        refused = lab.refused_advertisements(agent)
        print(f"  {agent}: the kernel refused {len(refused)} of its advertisements" + (f" (first: {refused[0]})" if refused else ""))
        if refused:
            fail(f"the kernel refused {len(refused)} of agent {agent}'s advertisements (first: {refused[0]})")
