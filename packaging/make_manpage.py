#!/usr/bin/env python3
"""Writes sigmatrace(1), the manual page, from the command's own help: what `sigmatrace --help`
and each command's --help print (the options, and the SIGMATRACE_* variables `profile --help`
lists from the one table that declares them), so that the page never says other than the
command. usage: make_manpage.py SIGMATRACE OUT.1"""
import re
import subprocess
import sys


def help_of(exe, *args):
    return subprocess.run([exe, *args, "--help"], capture_output=True, text=True, check=True).stdout


def roff(text):
    """Text as roff: backslashes and leading dots or quotes escaped."""
    out = []
    for line in text.rstrip("\n").split("\n"):
        line = line.replace("\\", "\\e").replace("-", "\\-")
        if line.startswith((".", "'")):
            line = "\\&" + line
        out.append(line)
    return "\n".join(out)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    exe, out = sys.argv[1], sys.argv[2]
    version = subprocess.run([exe, "--version"], capture_output=True, text=True, check=True).stdout.strip()
    top = help_of(exe)
    description = top.split("\n", 1)[0].split(": ", 1)[-1]
    commands = []  # (name, one-line description) from the top-level help's subcommand list
    in_subcommands = False
    for line in top.splitlines():
        if line.startswith("Subcommands:"):
            in_subcommands = True
            continue
        m = re.match(r"^  (\S+)\s+(.*)$", line) if in_subcommands else None
        if m:
            commands.append((m.group(1), m.group(2)))
    if not commands:
        sys.exit("make_manpage.py: no subcommands in sigmatrace --help")
    page = [f'.TH SIGMATRACE 1 "" "{version}" "User Commands"',
            ".SH NAME", f"sigmatrace \\- {roff(description)}",
            ".SH SYNOPSIS",
            ".B sigmatrace profile", "[\\fIoptions\\fR] \\-\\- \\fIprogram\\fR [\\fIargs\\fR...]", ".br",
            ".B sigmatrace", "\\fIcommand\\fR [\\fIoptions\\fR] \\fIexperiment\\fR",
            ".SH DESCRIPTION",
            roff("Profiles the RDMA communication of a program operation by operation, without recompiling it: "
                 "verbs and mlx5, GPU-initiated RDMA (doorbells rung by GPU threads), UCX, libfabric, MPI, NVTX "
                 "and NCCL. Under a launcher, put it after the launcher: mpirun -np 16 sigmatrace profile -o run1 "
                 "-- ./app. Every process writes its own file into one experiment directory, which analyze turns "
                 "into a Perfetto timeline, an SQLite database and aggregate.json."),
            ".SH COMMANDS"]
    environment = ""
    for name, summary in commands:
        text = help_of(exe, name)
        if name == "profile" and "\nEnvironment" in text:
            text, environment = text.split("\nEnvironment", 1)
            environment = "Environment" + environment
        text = text.strip()
        if text.startswith(summary):  # each command's help opens with its summary, said just above
            text = text[len(summary):].strip()
        page += [f".SS {name}", roff(summary), ".PP", ".nf", roff(text), ".fi"]
    if environment:
        page += [".SH ENVIRONMENT", ".nf", roff(environment.strip()), ".fi"]
    page += [".SH FILES", roff("The documents installed with it (share/doc/sigmatrace) describe every output; "
                               "share/sigmatrace/queries holds example SQL for sigmatrace sql.")]
    with open(out, "w") as f:
        f.write("\n".join(page) + "\n")


main()
