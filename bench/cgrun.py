#!/usr/bin/env python3
"""Run one benchmark command in a cgroup of its own and record its CPU time as it goes.

Whole-process-tree CPU from /usr/bin/time is not trustworthy for a tool whose workers are not
reaped by the process that `time` waits for (Filebench's worker processes), and it mixes the
setup (creating thousands of files) into the run. A cgroup counts every process the command
starts, whoever reaps it; sampling its counters with timestamps, beside the command's output
lines stamped on arrival, lets the caller cut out exactly the timed phase.

    cgrun.py [--stop-after REGEX SECONDS] PREFIX -- COMMAND [ARGS...]

writes PREFIX.log (the command's output, stdout and stderr merged, as it printed it),
PREFIX.lines ("<monotonic s> <line>" for every output line) and PREFIX.cpu ("<monotonic s>
<usage ns> <user ns> <system ns>" every 50 ms, first and last sample at start and end; its
first line, "# unix <Unix time> <monotonic s>", relates the two clocks).
--stop-after: once a line matches REGEX, allow SECONDS for the command to end on its own,
then kill everything in the cgroup (Filebench sometimes hangs after its summary).
Needs root and a cgroup v2 or v1 cpuacct hierarchy; exits 3 when neither is usable.
"""
import os
import re
import signal
import subprocess
import sys
import threading
import time

V2 = "/sys/fs/cgroup"
V1 = "/sys/fs/cgroup/cpuacct"


class Cgroup:
    """A fresh cgroup under v2 (cpu.stat) or v1 (cpuacct.*), removed on close."""

    def __init__(self, name):
        if os.path.exists(os.path.join(V2, "cgroup.controllers")):
            self.v2, base = True, V2
        elif os.path.exists(os.path.join(V1, "cpuacct.usage")):
            self.v2, base = False, V1
        else:
            raise OSError("no cgroup v2 and no v1 cpuacct hierarchy")
        self.path = os.path.join(base, name)
        os.mkdir(self.path)

    def procs_file(self):
        return os.path.join(self.path, "cgroup.procs")

    def usage(self):
        """(total, user, system) CPU time in nanoseconds."""
        if self.v2:
            vals = {}
            with open(os.path.join(self.path, "cpu.stat")) as f:
                for line in f:
                    k, v = line.split()
                    vals[k] = int(v)
            return (vals["usage_usec"] * 1000, vals["user_usec"] * 1000, vals["system_usec"] * 1000)
        read = lambda n: int(open(os.path.join(self.path, n)).read().split()[0])
        return (read("cpuacct.usage"), read("cpuacct.usage_user"), read("cpuacct.usage_sys"))

    def pids(self):
        try:
            return [int(p) for p in open(self.procs_file()).read().split()]
        except OSError:
            return []

    def kill_all(self):
        for p in self.pids():
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def close(self):
        deadline = time.monotonic() + 10
        while self.pids() and time.monotonic() < deadline:
            self.kill_all()
            time.sleep(0.05)
        try:
            os.rmdir(self.path)
        except OSError:
            pass


def main(argv):
    stop_re, stop_s = None, 0.0
    if argv[:1] == ["--stop-after"]:
        stop_re, stop_s, argv = re.compile(argv[1]), float(argv[2]), argv[3:]
    if len(argv) < 3 or argv[1] != "--":
        print("usage: cgrun.py [--stop-after REGEX SECONDS] PREFIX -- COMMAND [ARGS...]", file=sys.stderr)
        return 2
    prefix, cmd = argv[0], argv[2:]
    try:
        cg = Cgroup(f"fsbench-bench-{os.getpid()}")
    except OSError as e:
        print(f"cgrun: cannot make a cgroup ({e}); run as root on a cgroup v1/v2 host", file=sys.stderr)
        return 3
    samples, done = [], threading.Event()

    def sample():
        samples.append((time.monotonic(),) + cg.usage())

    def sampler():
        while not done.wait(0.05):
            sample()

    procs = cg.procs_file()

    def enter_cgroup():  # in the child, before exec: everything it starts is counted
        with open(procs, "w") as f:
            f.write(str(os.getpid()))

    unix0, mono0 = time.time(), time.monotonic()
    try:
        sample()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                preexec_fn=enter_cgroup, start_new_session=True)
        th = threading.Thread(target=sampler, daemon=True)
        th.start()
        killer = None
        with open(prefix + ".log", "wb") as log, open(prefix + ".lines", "w") as lines:
            for raw in proc.stdout:
                t = time.monotonic()
                log.write(raw)
                text = raw.decode("utf-8", "replace").rstrip("\n")
                lines.write(f"{t:.6f} {text}\n")
                if stop_re and killer is None and stop_re.search(text):
                    killer = threading.Timer(stop_s, cg.kill_all)
                    killer.daemon = True
                    killer.start()
        proc.wait()
        # Workers that outlive the command still count until they end (or are ended).
        deadline = time.monotonic() + (stop_s or 30)
        while cg.pids() and time.monotonic() < deadline:
            time.sleep(0.05)
        if killer:
            killer.cancel()
        done.set()
        th.join()
        sample()
        with open(prefix + ".cpu", "w") as f:
            f.write("# unix %.6f %.6f\n" % (unix0, mono0))
            for s in samples:
                f.write("%.6f %d %d %d\n" % s)
        return proc.returncode
    finally:
        cg.close()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
