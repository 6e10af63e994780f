"""The agents' D-Bus API: who may call what under the bus policy, and each agent's status at the end."""
from .agentslab import AGENTS
from .bounds import LEAST_API_MEMBERS


def api_access(lab, fail):
    answers = {caller: lab.phase(f"callers-{caller}")["answers"] for caller in ("root", "member", "other")}
    reads = {"Properties.Get", "Properties.GetAll"}
    wrong = []
    for member in sorted(answers["root"]):
        expected = {"root": "allowed", "member": "allowed", "other": "allowed" if member in reads else "denied"}
        got = {caller: answers[caller].get(member) for caller in answers}
        if got != expected:
            wrong.append(f"{member}: {got}")
    print(f"  {len(answers['root'])} members; root and members of enagent may call every one; another user only "
          f"{', '.join(sorted(reads))} (and Introspect)" + ("" if not wrong else "; NOT AS EXPECTED: " + "; ".join(wrong)))
    if wrong or len(answers["root"]) < LEAST_API_MEMBERS:
        fail(f"the bus policy lets the wrong callers through: {wrong or answers['root']}")


def api(lab, fail):
    for agent in AGENTS:
        status = lab.phase(f"status-{agent}")["status"]
        print(f"  {agent}: {status['status']}, advertising {'yes' if status['advertising'] else 'no'}, "
              f"{status['sightingsStored']} sightings stored, adapter {status['adapter']}")
        if status["status"] != "active" or status["adapter"] != AGENTS[agent]:
            fail(f"agent {agent}'s API says {status['status']} on {status['adapter'] or 'no adapter'}, not active on {AGENTS[agent]}")
