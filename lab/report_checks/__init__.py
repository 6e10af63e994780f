"""The checks of report.py (the agents' lab, agents.sh), grouped by what they judge: the lab's steps
and the agents' lives (lifecycle), what went on the air (air), what they heard and stored (heard),
exposure detection (exposure), their logs (logs), their adapters taken away and given back
(adapter), the radio shared with other programs (sharing) and their API (api). Each check is a
function of an AgentsLab (agentslab) and a `fail` callable; the bounds are in bounds. report.py's
checks() is the table that names them and the order they print in."""
