#!/usr/bin/python3
"""check-docs.py [ROOT]: checks the documentation against itself and the code (make check-docs).

Fails, naming FILE:LINE, when a relative link in README.md, NEWS, docs/*.md or dbus/*.md points
to a missing file or heading; when README.md is longer than 300 lines or holds a date; when the
statuses in README's table differ from AgentStatus in Sources/ENCore/AgentStatus.swift; when the
keys key-server.conf(5) documents differ from the keys enctl's parser takes; when a document
makes a promise listed in BROKEN_PROMISES, which the code does not keep, or lacks one listed in
KEPT_PROMISES; when the Cockpit page's table of statuses (cockpit/enagent/statuses.js) is not what
README's table makes of it (`check-docs.py --write-cockpit-statuses` writes it).
"""
import json
import glob
import os
import re
import sys

README_MAX_LINES = 300
STATUS_HEADING = "What each status means"
STATUS_SOURCE = "Sources/ENCore/AgentStatus.swift"
COCKPIT_STATUSES = "cockpit/enagent/statuses.js"

# (file, pattern, why): a claim the code does not bear out, which must not come back.
BROKEN_PROMISES = [
    ("README.md", r"sudo cp\s+\S*key-server\.conf|[Cc]opy `?/etc/enagent/key-server\.conf\.example",
     "a copy of the 0644 template leaves the API key readable by every user"),
    ("README.md", r"Every command has `--help` and `--json`", "test-result add, share, keys export, keys sign and watch have no --json"),
    ("etc/enagent.conf", r"^#adapter = hci\d", "no adapter is the default: enagentd takes the first that can advertise"),
    ("etc/enagent.conf", r"^#passive-scan = yes", "passive-scan is unset by default, and yes can crash Debian 12's Bluetooth stack"),
    ("docs/privacy.md", r"neither who uploads nor when", "decoys go with the timer only; a share run by hand shows its moment"),
    ("docs/sharing.md", r"neither who uploads nor when", "decoys go with the timer only; a share run by hand shows its moment"),
    ("README.md", r"stays with enagentd, and the timer sends it again", "a code-verified upload spent its code and waits for a new one"),
    ("Makefile", r"system-services/\s*$", "a bus activation file lets any user's enctl start an enagentd an administrator stopped"),
]
# (file, pattern, why): what a document must say.
KEPT_PROMISES = [
    ("README.md", r"sudoedit /etc/enagent/key-server\.conf",
     "key-server.conf is edited in place, keeping the package's mode 0640 and group enagent, as key-server.conf(5) requires"),
    ("README.md", r"00:00, 04:00, 08:00 and so on\s+\(the machine's local time", "the timer's calendar is local time, while enctl's times are UTC"),
    ("docs/sharing.md", r'accepts a code\s+for a confirmed test only', "a code for a likely test is refused by the verification server"),
    ("docs/sharing.md", r"named `\*\.json`", "only *.json files in trusted-issuers count"),
    ("man/enagentd.8", r"Exit status: 0 after a clean stop", "enagentd(8) says what its exit statuses mean (64 keeps the unit from restarting)"),
]

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^\s*(```|~~~)")
CODE_SPAN = re.compile(r"`[^`]*`")
DATE = re.compile(r"\b(19|20)\d\d-[01]\d-[0-3]\d\b")


def prose_lines(path):
    """(number, line) of the lines outside fenced code, with inline code removed."""
    fenced = False
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if FENCE.match(line):
                fenced = not fenced
                continue
            if not fenced:
                yield number, CODE_SPAN.sub("", line)


def slug(heading):
    """GitHub's anchor for a heading's text."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text only
    text = text.replace("`", "").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path):
    """Every heading anchor of a Markdown file, with GitHub's -1, -2 for repeated ones."""
    found, seen = set(), {}
    fenced = False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if FENCE.match(line):
                fenced = not fenced
                continue
            match = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
            if fenced or not match:
                continue
            base = slug(match.group(1))
            count = seen.get(base, 0)
            seen[base] = count + 1
            found.add(base if count == 0 else f"{base}-{count}")
    return found


def check_links(root, path, errors):
    for number, line in prose_lines(path):
        for target in LINK.findall(line):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):
                continue  # a URL or mailto:
            file_part, _, anchor = target.partition("#")
            resolved = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
            where = f"{os.path.relpath(path, root)}:{number}"
            if not os.path.exists(resolved):
                errors.append(f"{where}: link to {target}: no file {os.path.relpath(resolved, root)}")
            elif anchor and resolved.endswith(".md") and anchor not in anchors(resolved):
                errors.append(f"{where}: link to {target}: no heading with anchor #{anchor} in {os.path.relpath(resolved, root)}")


def code_statuses(root):
    """The raw values of AgentStatus's cases, from its source."""
    statuses, inside = [], False
    with open(os.path.join(root, STATUS_SOURCE), encoding="utf-8") as f:
        for line in f:
            if re.match(r"\s*public enum AgentStatus\b", line):
                inside = True
            elif inside and re.match(r"\s*(public\s+)?(struct|var|func|static)\b", line):
                break
            elif inside:
                match = re.match(r'\s*case\s+(\w+)(?:\s*=\s*"([^"]+)")?\s*$', line)
                if match:
                    statuses.append(match.group(2) or match.group(1))
    return statuses


def readme_statuses(path):
    """(number of the heading, {status: line}) from the first column of README's status table."""
    heading, statuses = None, {}
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            if heading is None:
                if re.match(rf"^#+\s+{re.escape(STATUS_HEADING)}\s*$", line):
                    heading = number
            elif line.startswith("#"):
                break
            elif line.startswith("|"):
                match = re.match(r"^\|\s*`([^`]+)`\s*\|", line)
                if match:
                    statuses[match.group(1)] = number
    return heading, statuses


def readme_status_rows(path):
    """{status: {"meaning": ..., "todo": ...}} from README's status table, markdown as written."""
    rows, inside = {}, False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if re.match(rf"^#+\s+{re.escape(STATUS_HEADING)}\s*$", line):
                inside = True
            elif inside and line.startswith("#"):
                break
            elif inside:
                match = re.match(r"^\|\s*`([^`]+)`\s*\|(.*)\|(.*)\|\s*$", line)
                if match:
                    rows[match.group(1)] = {"meaning": match.group(2).strip(), "todo": match.group(3).strip()}
    return rows


def cockpit_statuses(root):
    """statuses.js as README's table makes it: the page says what each status means and what to do."""
    table = json.dumps(readme_status_rows(os.path.join(root, "README.md")), indent=4, ensure_ascii=False)
    return ("// Written by scripts/check-docs.py --write-cockpit-statuses from README.md's table\n"
            f"// \"{STATUS_HEADING}\" (make check-docs fails when it differs): edit the table, not this file.\n"
            f"window.ENAGENT_STATUSES = {table};\n")


def check_cockpit_statuses(root, errors):
    path = os.path.join(root, COCKPIT_STATUSES)
    current = open(path, encoding="utf-8").read() if os.path.exists(path) else ""
    if current != cockpit_statuses(root):
        errors.append(f"{COCKPIT_STATUSES}:1: not what README's table of statuses makes: run scripts/check-docs.py --write-cockpit-statuses")


def check_readme(root, errors):
    path = os.path.join(root, "README.md")
    with open(path, encoding="utf-8") as f:
        lines = f.readlines()
    if len(lines) > README_MAX_LINES:
        errors.append(f"README.md:{len(lines)}: {len(lines)} lines, more than {README_MAX_LINES}: move detail to docs/")
    for number, line in enumerate(lines, 1):
        match = DATE.search(line)
        if match:
            errors.append(f"README.md:{number}: a date ({match.group(0)}): README.md holds nothing dated (NEWS does)")
    heading, documented = readme_statuses(path)
    if heading is None:
        errors.append(f"README.md:1: no heading '{STATUS_HEADING}' with the table of statuses")
        return
    code = code_statuses(root)
    if not code:
        errors.append(f"{STATUS_SOURCE}:1: no cases of AgentStatus found")
    for status in code:
        if status not in documented:
            errors.append(f"README.md:{heading}: status {status} ({STATUS_SOURCE}) is missing from the table")
    for status, number in documented.items():
        if status not in code:
            errors.append(f"README.md:{number}: status {status} is not a case of AgentStatus ({STATUS_SOURCE})")


# Each configuration file's man page, and the parser whose keys it must document (enagent.conf(5)
# is checked against AgentConfiguration.keys and enagentd's options by ConfigurationDocumentationTests).
CONFIGURATION_PAGES = (("man/key-server.conf.5", "Sources/enctl/KeyServer.swift"),)


def page_keys(path):
    """{key: line} of the entries `.BI "key = " value` of a configuration file's man page."""
    keys = {}
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            match = re.match(r'^\.BI\s+"([^"=]+?)(?:"\s+(\w+)\s+")?\s*=\s*"', line)
            if match:
                keys[(match.group(1) + (match.group(2) or "")).replace("\\-", "-").strip()] = number
    return keys


def parser_keys(path):
    """The keys a parser's `case "key":` lines take; a prefix case (`hasPrefix(Self.xPrefix)`) as
    the prefix and "address", as the man page writes it."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    keys = set(re.findall(r'^\s*case\s+"([a-z][a-z0-9.-]*)"\s*:', text, re.M))
    for name in re.findall(r"hasPrefix\(Self\.(\w+)\)", text):
        prefix = re.search(rf'static let {name} = "([^"]+)"', text)
        if prefix:
            keys.add(prefix.group(1) + "address")
    return keys


def check_configuration_pages(root, errors):
    for page, source in CONFIGURATION_PAGES:
        documented, taken = page_keys(os.path.join(root, page)), parser_keys(os.path.join(root, source))
        if not taken:
            errors.append(f"{source}:1: no configuration keys found")
        for key in sorted(taken - documented.keys()):
            errors.append(f"{page}:1: key {key} ({source}) is not documented")
        for key, number in documented.items():
            if key not in taken:
                errors.append(f"{page}:{number}: key {key} is not one {source} takes")


def check_promises(root, errors):
    for name, pattern, why in BROKEN_PROMISES:
        with open(os.path.join(root, name), encoding="utf-8") as f:
            for number, line in enumerate(f, 1):
                if re.search(pattern, line):
                    errors.append(f"{name}:{number}: {why}")
    for name, pattern, why in KEPT_PROMISES:
        with open(os.path.join(root, name), encoding="utf-8") as f:
            if not re.search(pattern, f.read()):
                errors.append(f"{name}:1: does not say it: {why}")


def main():
    arguments = [argument for argument in sys.argv[1:] if argument != "--write-cockpit-statuses"]
    root = os.path.abspath(arguments[0] if arguments else os.path.join(os.path.dirname(__file__), ".."))
    if len(arguments) < len(sys.argv) - 1:
        with open(os.path.join(root, COCKPIT_STATUSES), "w", encoding="utf-8") as f:
            f.write(cockpit_statuses(root))
    errors = []
    documents = [os.path.join(root, name) for name in ("README.md", "NEWS")]
    documents += sorted(glob.glob(os.path.join(root, "docs", "*.md")) + glob.glob(os.path.join(root, "dbus", "*.md")))
    for path in documents:
        if os.path.exists(path):
            check_links(root, path, errors)
    check_readme(root, errors)
    check_configuration_pages(root, errors)
    check_promises(root, errors)
    check_cockpit_statuses(root, errors)
    for error in errors:
        print(error, file=sys.stderr)
    if errors:
        print(f"check-docs: {len(errors)} problem(s)", file=sys.stderr)
        return 1
    print(f"check-docs: ok ({len(documents)} documents)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
