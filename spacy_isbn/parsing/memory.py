"""A process's peak memory, for the parse summary and its benchmark."""
import resource


def peak_rss_kib() -> int:
    """This process's peak resident set size in KiB: ``VmHWM`` where Linux
    gives it, since ``ru_maxrss`` of a process started by fork (or vfork)
    and exec also counts its parent's peak before the exec, which would make
    every worker process look as big as the process that started it."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
