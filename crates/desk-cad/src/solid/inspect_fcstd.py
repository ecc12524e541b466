# Inspector entry point (after fcstd_read.py): facts about /in/candidate.FCStd as one DESKJSON line.


def inspect(path):
    try:
        facts, _shapes, _union = examine(path)
    except Unreadable as error:
        return report(status="unreadable", reason=str(error))
    except Exception as error:
        return report(status="unreadable", reason="failed to read: %s" % type(error).__name__)
    report(**facts)


inspect("/in/candidate.FCStd")
