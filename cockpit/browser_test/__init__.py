"""The parts of cockpit/browser-test.py (make test-cockpit): harness (failures, checks, commands,
waits, the Work and the names of the machine), provision (the packages, users, bus, enagentd),
cockpit_units (Cockpit as its units run it), database (what the test writes into enagentd's
database), cdp (chromium over the DevTools protocol) and scenarios (what each user sees and may do)."""
