# Judge entry point (after fcstd_read.py): facts about /in/gold.FCStd and /in/candidate.FCStd and,
# when both have part solids, the common volume of the two parts after the allowed alignment
# (the candidate translated so its centre of mass lies on the gold's; no rotation, no scaling).
# One DESKJSON line, preceded by a "DESKGOLD read" line once the gold is read.
#
# A part is the union of its solids (fcstd_read.union_of: one fuse, or the compound of the solids
# when the fuse fails), so a part of several solids, touching or not, is measured like one solid;
# its centre of mass is the volume-weighted mean of the union's solids' centres.
#
# The common volume has three estimates. OCCT's boolean common, exact and fuzzy (FUZZ mm): after
# the alignment a candidate that matches the gold to a few microns has faces a hair apart from the
# gold's everywhere, and the exact common of such near-coincident faces can come back silently
# empty; the fuzzy one takes entities within FUZZ as coincident but can fail the same silent way
# on other inputs. Both fail by losing volume (or raising), never by adding it. The third is
# independent of the booleans: a sample of GRID x GRID lines parallel to Z through the joint
# bounding box, each cut by the triangles of OCCT's tessellation of every solid (inside where
# the crossings' parity is odd), the IoU being the summed common length over the summed union
# length. (Point membership with Solid.isInside was the first choice, but OCCT rebuilds its
# classifier on every call: 17 ms a point on a 58-face solid, a minute for 4,096 points.) The
# sample decides when the booleans both fail, disagree by more than AGREE of the smaller part, or
# agree on an IoU below TRUSTED (a silently lost common would cost the whole IoU category there):
# the larger boolean whose IoU lies within MARGIN of the sample's is kept (its exact volume), else
# the sample's IoU is the result. "method" says which: exact, fuzzy or sampled.

FUZZ = 0.01
AGREE = 1e-3
TRUSTED = 0.99
GRID = 128
MARGIN = 0.01
# The tessellation's deflection, relative to the joint bounding box's diagonal.
DEFLECTION = 2e-4
SAMPLE_SECONDS = 15.0


def triangles_of(solids, deflection):
    """One (T, 3, 3) array of triangle corners per solid."""
    import numpy

    out = []
    for solid in solids:
        points, triangles = solid.tessellate(deflection)
        if not triangles:
            continue
        corners = numpy.array([[p.x, p.y, p.z] for p in points], dtype=float)
        out.append(corners[numpy.array(triangles, dtype=int)])
    return out


def crossings_by_row(tris, ys, xss, deadline):
    """For each row y and each x of its row, the sorted Z crossings of the line (x, y) with the triangles,
    or None for a line whose crossings are odd (it grazed an edge)."""
    import numpy
    import time

    x0, y0, z0 = tris[:, 0, 0], tris[:, 0, 1], tris[:, 0, 2]
    x1, y1, z1 = tris[:, 1, 0], tris[:, 1, 1], tris[:, 1, 2]
    x2, y2, z2 = tris[:, 2, 0], tris[:, 2, 1], tris[:, 2, 2]
    det = (y1 - y2) * (x0 - x2) + (x2 - x1) * (y0 - y2)
    flat = numpy.abs(det) > 1e-15
    ylo = numpy.minimum(numpy.minimum(y0, y1), y2)
    yhi = numpy.maximum(numpy.maximum(y0, y1), y2)
    rows = []
    for y, xs in zip(ys, xss):
        if time.monotonic() > deadline:
            raise TimeoutError("sample")
        pick = numpy.nonzero(flat & (ylo <= y) & (yhi >= y))[0]
        row = []
        if len(pick) == 0:
            rows.append([[] for _ in xs])
            continue
        px = xs[:, None]
        a = ((y1[pick] - y2[pick]) * (px - x2[pick]) + (x2[pick] - x1[pick]) * (y - y2[pick])) \
            / det[pick]
        b = ((y2[pick] - y0[pick]) * (px - x2[pick]) + (x0[pick] - x2[pick]) * (y - y2[pick])) \
            / det[pick]
        c = 1.0 - a - b
        hit = (a >= 0) & (b >= 0) & (c >= 0)
        z = a * z0[pick] + b * z1[pick] + c * z2[pick]
        for i in range(len(xs)):
            found = numpy.sort(z[i][hit[i]])
            row.append(list(found) if len(found) % 2 == 0 else None)
        rows.append(row)
    return rows


def union_intervals(lists):
    """The union of the intervals (pairs of consecutive crossings) of several solids."""
    intervals = sorted((zs[k], zs[k + 1]) for zs in lists for k in range(0, len(zs), 2))
    merged = []
    for lo, hi in intervals:
        if merged and lo <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], hi)
        else:
            merged.append([lo, hi])
    return merged


def length(intervals):
    return sum(hi - lo for lo, hi in intervals)


def common_length(a, b):
    total, i, j = 0.0, 0, 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        total += max(0.0, hi - lo)
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return total


def sample_iou(gold_solids, candidate_solids):
    """(IoU, lines used) of the line sample, or None when it cannot say."""
    import FreeCAD
    import numpy
    import time

    joint = FreeCAD.BoundBox()
    for solid in gold_solids + candidate_solids:
        joint.add(solid.BoundBox)
    deflection = DEFLECTION * joint.DiagonalLength
    deadline = time.monotonic() + SAMPLE_SECONDS
    # One line at a fixed pseudo-random place in each cell of a GRID x GRID grid (stratified: no
    # aliasing with a model's regular features, the same lines every run).
    rng = numpy.random.RandomState(20251206)
    ys = joint.YMin + (numpy.arange(GRID) + rng.uniform(size=GRID)) / GRID * joint.YLength
    xss = joint.XMin + (numpy.arange(GRID)[None, :] + rng.uniform(size=(GRID, GRID))) / GRID \
        * joint.XLength
    try:
        gold = [crossings_by_row(t, ys, xss, deadline)
                for t in triangles_of(gold_solids, deflection)]
        candidate = [crossings_by_row(t, ys, xss, deadline)
                     for t in triangles_of(candidate_solids, deflection)]
    except TimeoutError:
        return None
    both = either = 0.0
    used = 0
    for r in range(GRID):
        for i in range(GRID):
            g = [rows[r][i] for rows in gold]
            c = [rows[r][i] for rows in candidate]
            if any(zs is None for zs in g + c):
                continue
            used += 1
            g, c = union_intervals(g), union_intervals(c)
            shared = common_length(g, c)
            both += shared
            either += length(g) + length(c) - shared
    if either <= 0 or used < GRID * GRID // 2:
        return None
    return both / either, used

def side(path):
    try:
        facts, shapes, union = examine(path, draw=True)
    except Exception as error:
        return refusal(error), [], None
    return facts, shapes, union


def overlap_of(gold_union, candidate_union):
    gold_shape, gold_solids = gold_union
    candidate_shape, candidate_solids = candidate_union
    gold_volume = sum(s.Volume for s in gold_solids)
    candidate_volume = sum(s.Volume for s in candidate_solids)
    shift = centre_of_mass(gold_solids).sub(centre_of_mass(candidate_solids))
    moved = candidate_shape.copy()
    moved.translate(shift)
    moved_solids = moved.Solids
    smaller = min(gold_volume, candidate_volume)

    def iou(common):
        union = gold_volume + candidate_volume - common
        return common / union if union > 0 else 0.0

    booleans = {}
    for method, fuzz in (("exact", 0.0), ("fuzzy", FUZZ)):
        try:
            common = gold_shape.common(moved, fuzz) if fuzz else gold_shape.common(moved)
            if not common.isNull() and common.Volume >= 0:
                booleans[method] = min(common.Volume, smaller)
        except Exception:
            pass
    volumes = sorted(booleans.values())
    agree = len(volumes) == 2 and volumes[1] - volumes[0] <= AGREE * smaller
    result = dict(status="ok", gold_volume=gold_volume, candidate_volume=candidate_volume,
                  shift=[shift.x, shift.y, shift.z], sampled_iou=None)
    if agree and iou(volumes[1]) >= TRUSTED:
        method = max(booleans, key=lambda m: booleans[m])
        return dict(result, method=method, common_volume=booleans[method])
    sample = sample_iou(gold_solids, moved_solids)
    if sample is None:
        if not booleans:
            return dict(status="failed", reason="no common and no sample")
        # No independent estimate: the larger boolean, as before the sample existed.
        method = max(booleans, key=lambda m: booleans[m])
        return dict(result, method=method, common_volume=booleans[method])
    sampled, _lines = sample
    result.update(sampled_iou=sampled)
    near = [m for m, v in booleans.items() if abs(iou(v) - sampled) <= MARGIN]
    if near:
        method = max(near, key=lambda m: booleans[m])
        return dict(result, method=method, common_volume=booleans[method])
    # The sample's IoU as a common volume: c / (g + k - c) = s.
    common = sampled * (gold_volume + candidate_volume) / (1.0 + sampled)
    return dict(result, method="sampled", common_volume=min(common, smaller))


def judge():
    gold, _gold_shapes, gold_union = side("/in/gold.FCStd")
    # From here on a crash or a stall is the candidate's doing; the caller scores it zero.
    sys.stdout.write("\nDESKGOLD read\n")
    sys.stdout.flush()
    candidate, _candidate_shapes, candidate_union = side("/in/candidate.FCStd")
    overlap = None
    if gold_union is not None and candidate_union is not None:
        try:
            overlap = overlap_of(gold_union, candidate_union)
        except MemoryError as error:
            candidate = refusal(error)
        except Exception as error:
            overlap = dict(status="failed", reason=type(error).__name__)
    report(gold=gold, candidate=candidate, overlap=overlap)
    # With part_draw.py (the report's pictures), after the report: it cannot change the score.
    if "draw_parts" in globals():
        draw_parts(gold_union, candidate_union)


judge()
