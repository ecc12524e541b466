# Inspector entry point (after fcstd_read.py): facts about /in/candidate.FCStd as one DESKJSON line.


def inspect(path):
    try:
        # The caller sets INSPECT_DRAW (with sheet_draw.py) to recompute Layout1 as the judge does.
        facts, _shapes, _union = examine(path, draw=globals().get("INSPECT_DRAW", False))
    except Exception as error:
        return report(**refusal(error))
    report(**facts)


inspect("/in/candidate.FCStd")
