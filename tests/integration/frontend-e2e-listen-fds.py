#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Socket activation the way systemd does it, for the end-to-end tests: this process opens the listening
sockets and keeps them for its whole life, and runs COMMAND on them, one run after another, each time
handing them over by the sd_listen_fds() convention (fds 3.., LISTEN_FDS, LISTEN_PID = the child's own
pid, LISTEN_FDNAMES). Like a .socket unit, it keeps the sockets open between runs: connections made
while no run is alive wait in their backlog for the next one.

  frontend-e2e-listen-fds.py [--tcp HOST:PORT]... [--unix PATH]... [--cgroup DIR] [--log FILE]
                             [--runs N] -- COMMAND [ARGS...]

Run 1 starts at once; each further run (up to --runs) on SIGUSR1 once the previous one exited. --cgroup:
each child moves itself into DIR (cgroup.procs) before it execs. --log: the child's stdout and stderr,
"%d" in it replaced by the run's number. On stdout, one line each: "listening", "run N: pid P",
"run N: pid P exited with status S" (S: the exit code, or -SIGNAL). SIGTERM is passed to a running child;
this process ends once
none runs (at once, or when the child exited), which then removes the Unix socket paths it created."""

import argparse
import os
import signal
import socket
import sys


def open_sockets(args):
    socks, names = [], []
    for address in args.tcp:
        host, port = address.rsplit(":", 1)
        host = host.strip("[]")
        s = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((host, int(port)))
        s.listen(128)
        socks.append(s)
        names.append("tcp")
    for path in args.unix:
        if os.path.exists(path):
            os.unlink(path)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(path)
        s.listen(128)
        socks.append(s)
        names.append("unix")
    return socks, names


def child(args, socks, names, run):
    """In the forked child: never returns."""
    try:
        if args.cgroup:
            with open(os.path.join(args.cgroup, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))
        if args.log:
            out = os.open(args.log.replace("%d", str(run)), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            os.dup2(out, 1)
            os.dup2(out, 2)
            os.close(out)
        # out of the way of 3.. first: dup2(fd, fd) would keep a socket's FD_CLOEXEC
        high = [os.dup(s.fileno()) for s in socks]
        for i, fd in enumerate(high):
            os.dup2(fd, 3 + i, inheritable=True)
            os.set_inheritable(3 + i, True)
        for fd in high:
            if fd >= 3 + len(socks):
                os.close(fd)
        env = dict(os.environ)
        env.update(LISTEN_FDS=str(len(socks)), LISTEN_PID=str(os.getpid()), LISTEN_FDNAMES=":".join(names))
        signal.pthread_sigmask(signal.SIG_SETMASK, [])
        os.execvpe(args.command[0], args.command, env)
    except BaseException as e:  # noqa: B036 - whatever it was, the child must not return into the parent's loop
        print(f"frontend-e2e-listen-fds.py: run {run}: {e}", file=sys.stderr, flush=True)
    os._exit(127)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tcp", action="append", default=[])
    ap.add_argument("--unix", action="append", default=[])
    ap.add_argument("--cgroup", default="")
    ap.add_argument("--log", default="")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("command", nargs="+")
    args = ap.parse_args()

    # every signal this loop acts on is taken with sigwait(): none is lost between two runs
    wanted = {signal.SIGUSR1, signal.SIGTERM, signal.SIGINT, signal.SIGCHLD}
    signal.pthread_sigmask(signal.SIG_BLOCK, wanted)
    socks, names = open_sockets(args)
    print("listening", flush=True)

    run, pid, stopping = 0, 0, False
    try:
        while True:
            if pid == 0 and run == 0:
                sig = signal.SIGUSR1
            else:
                sig = signal.sigwait(wanted)
            if sig == signal.SIGUSR1 and pid == 0 and run < args.runs:
                run += 1
                pid = os.fork()
                if pid == 0:
                    child(args, socks, names, run)
                print(f"run {run}: pid {pid}", flush=True)
            elif sig == signal.SIGCHLD and pid != 0:
                got, status = os.waitpid(pid, os.WNOHANG)
                if got == pid:
                    code = os.waitstatus_to_exitcode(status)
                    print(f"run {run}: pid {pid} exited with status {code}", flush=True)
                    pid = 0
                    if stopping:
                        break
            elif sig in (signal.SIGTERM, signal.SIGINT):
                if pid == 0:
                    break
                stopping = True
                os.kill(pid, signal.SIGTERM)
    finally:
        for path in args.unix:
            try:
                os.unlink(path)
            except OSError:
                pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
