"""The suite ends with the plain line every runner of this project prints,
"N passed, N failed" (errors count as failures), after pytest's own summary.
"""
import atexit

_counts = {"passed": 0, "failed": 0}


def pytest_runtest_logreport(report):
    if report.when == "call" and report.passed:
        _counts["passed"] += 1
    elif report.failed:
        _counts["failed"] += 1


def _last_line():
    print("%d passed, %d failed" % (_counts["passed"], _counts["failed"]))


atexit.register(_last_line)
