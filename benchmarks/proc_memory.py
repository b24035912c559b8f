"""Resident memory of this process from /proc (Linux), shared by the benchmarks."""


def status_kb(field):
    """A ``/proc/self/status`` field in kB (``VmRSS``, ``VmHWM``), or None where unavailable."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def reset_peak():
    """Reset VmHWM to the current resident set (Linux >= 4.0); False when not possible."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False
