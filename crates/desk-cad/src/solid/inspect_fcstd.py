# Inspector entry point (after fcstd_read.py): facts about /in/candidate.FCStd as one DESKJSON line.


def inspect(path):
    try:
        facts, _shapes, _union = examine(path)
    except Exception as error:
        return report(**refusal(error))
    report(**facts)


inspect("/in/candidate.FCStd")
