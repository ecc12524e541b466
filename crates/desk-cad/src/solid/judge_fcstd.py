# Judge entry point (after fcstd_read.py): facts about /in/gold.FCStd and /in/candidate.FCStd and,
# when both have part solids, the common volume of the two parts after the allowed alignment
# (the candidate translated so its centre of mass lies on the gold's; no rotation, no scaling),
# computed with OCCT's boolean on shapes read from BREP. One DESKJSON line, preceded by a
# "DESKGOLD read" line once the gold is read.
#
# The common is computed twice, exact and fuzzy (FUZZ mm), and the larger volume kept (never more
# than the smaller part): after the alignment, a candidate that matches the gold to a few microns
# has faces a hair apart from the gold's everywhere, and OCCT's exact common of such
# near-coincident faces can come back silently empty (an IoU of 0 for a near-perfect part); the
# fuzzy one takes entities within FUZZ as coincident but can fail the same silent way on other
# inputs (a part with one hole moved). Both fail by losing volume, never by adding it. Features
# are millimetres apart, so FUZZ hides no real difference.

FUZZ = 0.01


def fused(solids):
    if len(solids) == 1:
        return solids[0]
    return solids[0].multiFuse(solids[1:])


def side(path):
    try:
        facts, shapes = examine(path)
    except Unreadable as error:
        return dict(status="unreadable", reason=str(error)), []
    except Exception as error:
        return dict(status="unreadable", reason="failed to read: %s" % type(error).__name__), []
    return facts, shapes


def judge():
    gold, gold_shapes = side("/in/gold.FCStd")
    # From here on a crash or a stall is the candidate's doing; the caller scores it zero.
    sys.stdout.write("\nDESKGOLD read\n")
    sys.stdout.flush()
    candidate, candidate_shapes = side("/in/candidate.FCStd")
    overlap = None
    if gold_shapes and candidate_shapes:
        try:
            gold_part = fused(gold_shapes)
            candidate_part = fused(candidate_shapes)
            shift = gold_part.CenterOfMass.sub(candidate_part.CenterOfMass)
            moved = candidate_part.copy()
            moved.translate(shift)
            volumes = []
            for fuzz in (0.0, FUZZ):
                try:
                    common = gold_part.common(moved, fuzz) if fuzz else gold_part.common(moved)
                    if not common.isNull():
                        volumes.append(common.Volume)
                except Exception:
                    pass
            if not volumes:
                raise ValueError("no common")
            if min(volumes) < 0:
                overlap = dict(status="failed", reason="negative common volume")
            else:
                common_volume = min(max(volumes), gold_part.Volume, candidate_part.Volume)
                overlap = dict(status="ok", gold_volume=gold_part.Volume,
                               candidate_volume=candidate_part.Volume,
                               common_volume=common_volume, shift=[shift.x, shift.y, shift.z])
        except Exception as error:
            overlap = dict(status="failed", reason=type(error).__name__)
    report(gold=gold, candidate=candidate, overlap=overlap)


judge()
