# The judge's picture of each part (after the judge's report, only when the caller asks for it):
# an isometric line drawing of the part's union, projected by OCCT's hidden-line removal
# (TechDraw.projectEx on the shape alone, no TechDraw page or document), in the part's
# millimetres as seen from the front-right-top (+X, -Y, +Z) with Z up: the visible sharp and
# outline edges, and the hidden ones. Seam edges are refined away first, as on the sheet
# (sheet_draw.py's `refined`). One "DESKPICTURES {...}" line after the DESKJSON report, so a
# crash or a stall here never changes a score: the report is out before anything is drawn.
# Bounds: PICTURE_POINTS points per part; a part is skipped once the run has used
# PICTURE_SECONDS.

PICTURE_POINTS = 100000
PICTURE_SECONDS = 40.0
PICTURE_STARTED = __import__("time").monotonic()
# projectEx's groups: visible sharp, smooth, seam, outline, iso; then the same hidden.
PICTURE_VISIBLE = (0, 1, 3)
PICTURE_HIDDEN = (5, 6, 8)


def iso_matrix():
    """The rotation taking the isometric view direction to +Z and the part's Z axis to +Y."""
    import FreeCAD

    w = FreeCAD.Vector(1, -1, 1).normalize()
    up = FreeCAD.Vector(0, 0, 1)
    v = up.sub(FreeCAD.Vector(w).multiply(up.dot(w))).normalize()
    u = v.cross(w)
    return FreeCAD.Matrix(u.x, u.y, u.z, 0, v.x, v.y, v.z, 0, w.x, w.y, w.z, 0, 0, 0, 0, 1)


def picture_lines(compound, left):
    lines = []
    if compound is None or compound.isNull():
        return lines, left
    for edge in compound.Edges:
        try:
            if len(edge.Vertexes) >= 2 and edge.Curve.TypeId == "Part::GeomLine":
                points = [edge.Vertexes[0].Point, edge.Vertexes[-1].Point]
            else:
                points = edge.discretize(Number=max(2, min(120, int(edge.Length / 0.5) + 2)))
        except Exception:
            continue
        left -= len(points)
        if left < 0:
            break
        lines.append([[round(p.x, 3), round(p.y, 3)] for p in points])
    return lines, left


def part_picture(union):
    import time
    import TechDraw

    if union is None or time.monotonic() - PICTURE_STARTED > PICTURE_SECONDS:
        return None
    shape = union[0]
    try:
        clean = shape.removeSplitter()
        if not clean.isNull():
            shape = clean
    except Exception:
        pass
    turned = shape.copy()
    turned.transformShape(iso_matrix())
    groups = TechDraw.projectEx(turned, __import__("FreeCAD").Vector(0, 0, 1))
    left = PICTURE_POINTS
    visible, hidden = [], []
    for index in PICTURE_VISIBLE:
        lines, left = picture_lines(groups[index], left)
        visible.extend(lines)
    for index in PICTURE_HIDDEN:
        lines, left = picture_lines(groups[index], left)
        hidden.extend(lines)
    return dict(visible=visible, hidden=hidden, truncated=left < 0)


def draw_parts(gold_union, candidate_union):
    out = {}
    for name, union in (("gold", gold_union), ("candidate", candidate_union)):
        try:
            out[name] = part_picture(union)
        except Exception:
            out[name] = None
    sys.stdout.write("\nDESKPICTURES " + json.dumps(out, sort_keys=True) + "\n")
    sys.stdout.flush()
