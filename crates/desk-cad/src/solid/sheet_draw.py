# The judge's sheet drawing (after fcstd_read.py, before judge_fcstd.py): the TechDraw page
# labelled DRAW_LABEL (set by the caller) recomputed from its stored facts, never by opening the
# file as a document. A fresh document gets one Part::Feature per distinct view Source (the shapes
# read from their BREP members, like the part), and one view per stored view with the stored
# Direction, XDirection, Scale, Rotation and line-visibility flags (a section with its base view,
# normal and origin; a detail with its base view, anchor and radius), recomputed headless; then one
# dimension per stored dimension, with its Type and its References2D names on the recomputed
# views, whose getRawValue() is the value the page shows (an Arbitrary dimension shows its format
# text: the first number in it). FreeCAD names a view's edges by its own projection, so the same
# shape, direction and flags give the same names the GUI saved. The seam rule (scorer v6): the
# drawing is made from the sources refined (`refined`: no edges between two faces of one
# surface, which fused primitives leave and a drafter does not draw), in a second set of views
# only for a source that has such edges; the dimensions stay on the stored shapes' views.
#
# Output, in page millimetres (origin at the page's lower left, Y up), each view and dimension
# naming its view by its index in the page's facts: every view's visible and
# hidden edges as polylines, a section's cut faces (as loops) when its cut surface is hatched, the
# dimensions (value, type, the page points of a linear dimension's line), the notes (position,
# text size, lines). Rust draws them (score3d/sheet/render.rs). Bounds: at most MAX_VIEWS views and
# MAX_DIMENSIONS dimensions are recomputed, MAX_POINTS points drawn; scales outside [1e-3, 1e3]
# and zero directions are refused for that view (it is left undrawn, its dimensions unvalued).

MAX_VIEWS = 32
MAX_DIMENSIONS = 200
MAX_POINTS = 200000
FLAGS = ("HardHidden", "SmoothVisible", "SmoothHidden", "SeamVisible", "SeamHidden",
         "IsoVisible", "IsoHidden", "CoarseView")
DRAW_TYPES = {
    "TechDraw::DrawViewPart": "TechDraw::DrawViewPart",
    "TechDraw::DrawProjGroupItem": "TechDraw::DrawViewPart",
    "TechDraw::DrawViewSection": "TechDraw::DrawViewSection",
    "TechDraw::DrawViewDetail": "TechDraw::DrawViewDetail",
}


def vector_value(props, name):
    prop = props.get(name)
    element = prop.find("PropertyVector") if prop is not None else None
    if element is None:
        return None
    try:
        value = [float(element.get(axis)) for axis in ("valueX", "valueY", "valueZ")]
    except (TypeError, ValueError):
        return None
    return value if all(math.isfinite(v) for v in value) else None


def bool_value(props, name):
    prop = props.get(name)
    element = prop.find("Bool") if prop is not None else None
    return None if element is None else element.get("value") == "true"


def int_value(props, name):
    prop = props.get(name)
    element = prop.find("Integer") if prop is not None else None
    try:
        return int(element.get("value"))
    except (AttributeError, TypeError, ValueError):
        return None


def link_subs(prop):
    """(object, sub-element) pairs of a LinkSubList property."""
    out = []
    for child in prop.iter("Link"):
        if child.get("obj"):
            out.append((child.get("obj"), child.get("sub") or ""))
    return out


def first_number(text):
    import re

    found = re.search(r"[-+]?\d+(?:[.,]\d+)?", text or "")
    return float(found.group(0).replace(",", ".")) if found else None


class Budget:
    def __init__(self):
        self.points = MAX_POINTS

    def take(self, n):
        self.points -= n
        return self.points >= 0


def edge_points(edge, budget):
    """An edge as page-independent points: its ends when straight, else a discretization."""
    a, b = edge.Vertexes[0].Point, edge.Vertexes[-1].Point
    if len(edge.Vertexes) >= 1 and abs(edge.Length - a.distanceToPoint(b)) < 1e-6 * max(
            1.0, edge.Length):
        points = [a, b]
    else:
        points = edge.discretize(Number=max(2, min(120, int(edge.Length / 0.5) + 2)))
    return points if budget.take(len(points)) else None


def page_lines(edges, origin, budget):
    """TechDraw view edges (scaled, centred, Y down) as polylines in page millimetres."""
    lines = []
    for edge in edges:
        points = edge_points(edge, budget)
        if points is None:
            break
        lines.append([[round(origin[0] + p.x, 3), round(origin[1] - p.y, 3)] for p in points])
    return lines


def cut_loops(shape, props, view, origin, scale, budget):
    """A section's cut faces as loops in page millimetres, placed by matching the kept half's
    projected box to the section's drawn edges."""
    import FreeCAD
    import Part

    normal = vector_value(props, "SectionNormal")
    point = vector_value(props, "SectionOrigin")
    direction = vector_value(props, "Direction")
    right = vector_value(props, "XDirection")
    if None in (normal, point, direction, right):
        return []
    n = FreeCAD.Vector(*normal)
    d = FreeCAD.Vector(*direction)
    r = FreeCAD.Vector(*right)
    if n.Length < 1e-9 or d.Length < 1e-9 or r.Length < 1e-9:
        return []
    n.normalize()
    d.normalize()
    r.normalize()
    u = d.cross(r)
    size = 4.0 * shape.BoundBox.DiagonalLength + 1.0
    half = Part.makeBox(size, size, size)
    half.translate(FreeCAD.Vector(-size / 2, -size / 2, 0))
    half.Placement = FreeCAD.Placement(FreeCAD.Vector(*point),
                                       FreeCAD.Rotation(FreeCAD.Vector(0, 0, 1), n)).multiply(
        half.Placement)
    kept = shape.common(half)
    origin_point = FreeCAD.Vector(*point)
    drawn = FreeCAD.BoundBox()
    for edge in view.getVisibleEdges():
        drawn.add(edge.BoundBox)
    if not drawn.isValid():
        return []
    # The kept half's extent along r and u (its vertices and a sample of its curved edges).
    rs, us = [], []
    for edge in kept.Edges:
        for p in edge.discretize(Number=8):
            rs.append(p.dot(r))
            us.append(p.dot(u))
    if not rs:
        return []
    # Page position of a model point: its (r, u) scaled, moved so the kept half's box centre
    # lands on the drawn edges' box centre (TechDraw edges have Y down).
    shift_x = origin[0] + (drawn.XMin + drawn.XMax) / 2 - scale * (min(rs) + max(rs)) / 2
    shift_y = origin[1] - (drawn.YMin + drawn.YMax) / 2 - scale * (min(us) + max(us)) / 2
    faces = []
    for face in kept.Faces:
        # On the plane: every edge, not only the vertices (a bore's half cylinder has its
        # four corners on it).
        if any(abs(p.sub(origin_point).dot(n)) > 1e-6
               for edge in face.Edges for p in edge.discretize(Number=5)):
            continue
        loops = []
        for wire in face.Wires:
            points = []
            for index, edge in enumerate(wire.OrderedEdges):
                piece = edge_points(edge, budget)
                if piece is None:
                    return faces
                # The first edge's direction is known when the second meets one of its ends.
                if index == 1 and min(piece[0].distanceToPoint(points[0]),
                                      piece[-1].distanceToPoint(points[0])) < min(
                        piece[0].distanceToPoint(points[-1]),
                        piece[-1].distanceToPoint(points[-1])):
                    points.reverse()
                if points and piece[0].distanceToPoint(points[-1]) > \
                        piece[-1].distanceToPoint(points[-1]):
                    piece.reverse()
                points.extend(piece if not points else piece[1:])
            loops.append([[round(shift_x + scale * p.dot(r), 3),
                           round(shift_y + scale * p.dot(u), 3)] for p in points])
        faces.append(loops)
    return faces


def draw_page(archive, types, objects, members, offsets, view_index):
    """(drawing, values): the page's drawing and each dimension's value by object name."""
    import FreeCAD
    from FreeCAD import Vector as V

    budget = Budget()
    document = FreeCAD.newDocument("deskjudge")
    try:
        return draw_in(document, archive, types, objects, members, offsets, view_index, budget, V)
    finally:
        FreeCAD.closeDocument(document.Name)


def refined(shape):
    """The shape without seam edges (edges between two faces of one surface, which a drafter
    does not draw), or None when it has none or cannot be refined."""
    try:
        clean = shape.removeSplitter()
    except Exception:
        return None
    if clean.isNull() or len(clean.Edges) >= len(shape.Edges):
        return None
    return clean


def make_views(document, page, views, types, objects, features, offsets, V):
    """One recomputable view per stored view, on `features` (its Source by link names):
    (made, placed) by stored view name."""
    made = {}
    placed = {}
    for name in views:
        props = objects.get(name, {})
        kind = DRAW_TYPES[types[name]]
        base = None
        if kind != "TechDraw::DrawViewPart":
            links = link_targets(props["BaseView"]) if "BaseView" in props else []
            base = made.get(links[0]) if links else None
            if base is None:
                continue
        names = tuple(link_targets(props["Source"])) if "Source" in props else ()
        feature = features.get(names)
        direction = vector_value(props, "Direction")
        scale = float_value(props, "Scale")
        x, y = float_value(props, "X"), float_value(props, "Y")
        group = offsets.get(name, (0.0, 0.0))
        if feature is None or direction is None or scale is None or None in (x, y) \
                or None in group or not 1e-3 <= scale <= 1e3 \
                or sum(c * c for c in direction) < 1e-12:
            continue
        view = document.addObject(kind, "%sView%d" % (page.Name, len(made)))
        page.addView(view)
        view.Source = [feature]
        view.Direction = V(*direction)
        right = vector_value(props, "XDirection")
        if right is not None and sum(c * c for c in right) > 1e-12:
            view.XDirection = V(*right)
        view.ScaleType = "Custom"
        view.Scale = scale
        rotation = float_value(props, "Rotation")
        if rotation is not None:
            view.Rotation = rotation
        for flag in FLAGS:
            value = bool_value(props, flag)
            if value is not None:
                setattr(view, flag, value)
        if kind == "TechDraw::DrawViewSection":
            view.BaseView = base
            for prop in ("SectionNormal", "SectionOrigin"):
                value = vector_value(props, prop)
                if value is not None:
                    setattr(view, prop, V(*value))
        elif kind == "TechDraw::DrawViewDetail":
            view.BaseView = base
            anchor = vector_value(props, "AnchorPoint")
            if anchor is not None:
                view.AnchorPoint = V(*anchor)
            radius = float_value(props, "Radius")
            if radius is not None and radius > 0:
                view.Radius = radius
            reference = string_value(props, "Reference")
            if reference:
                view.Reference = reference
        made[name] = view
        placed[name] = (x + group[0], y + group[1], scale, props, feature)
    return made, placed


def draw_in(document, archive, types, objects, members, offsets, view_index, budget, V):
    import Part

    page = document.addObject("TechDraw::DrawPage", "Page")
    page.Template = document.addObject("TechDraw::DrawSVGTemplate", "Template")
    # Part views first, then sections and details (they need their base view made).
    order = {"TechDraw::DrawViewPart": 0, "TechDraw::DrawViewSection": 1,
             "TechDraw::DrawViewDetail": 2}
    views = [name for name in members if types.get(name, "") in DRAW_TYPES][:MAX_VIEWS]
    views.sort(key=lambda name: order[DRAW_TYPES[types[name]]])
    # The Source shapes as stored (the dimensions' edge names are those of their projection)
    # and, where they have seam edges, refined (the drawing: the seam rule).
    sources, clean_sources = {}, {}
    for name in views:
        props = objects.get(name, {})
        names = tuple(link_targets(props["Source"])) if "Source" in props else ()
        if not names or names in sources:
            continue
        shapes = []
        for source in names:
            if source in objects and "Shape" in objects[source]:
                shape = body_shape(archive, types, objects, source)
                if shape is not None and not shape.isNull():
                    shapes.append(shape)
        feature = clean = None
        if shapes:
            feature = document.addObject("Part::Feature", "Source%d" % len(sources))
            feature.Shape = shapes[0] if len(shapes) == 1 else Part.makeCompound(shapes)
            shape = refined(feature.Shape)
            if shape is not None:
                clean = document.addObject("Part::Feature", "Clean%d" % len(sources))
                clean.Shape = shape
        sources[names] = feature
        clean_sources[names] = clean if clean is not None else feature
    made, placed = make_views(document, page, views, types, objects, sources, offsets, V)
    drawn_made, drawn_placed = made, placed
    if any(clean is not sources[names] for names, clean in clean_sources.items()):
        clean_page = document.addObject("TechDraw::DrawPage", "Clean")
        clean_page.Template = document.addObject("TechDraw::DrawSVGTemplate", "CleanTemplate")
        drawn_made, drawn_placed = make_views(document, clean_page, views, types, objects,
                                              clean_sources, offsets, V)
    dimensions = [name for name in members
                  if types.get(name) == "TechDraw::DrawViewDimension"][:MAX_DIMENSIONS]
    made_dimensions = {}
    document.recompute()
    for name in dimensions:
        props = objects.get(name, {})
        refs = link_subs(props["References2D"]) if "References2D" in props else []
        kind = int_value(props, "Type")
        if not refs or kind is None or not 0 <= kind < len(DIM_TYPES) \
                or any(ref not in made for ref, _ in refs):
            continue
        dimension = document.addObject("TechDraw::DrawViewDimension", "Dimension%d" % len(
            made_dimensions))
        dimension.Type = DIM_TYPES[kind]
        dimension.References2D = [(made[ref], sub) for ref, sub in refs]
        measure = int_value(props, "MeasureType")
        if measure is not None and 0 <= measure < 2:
            dimension.MeasureType = measure
        page.addView(dimension)
        made_dimensions[name] = (dimension, refs[0][0])
    document.recompute()
    values, drawn_dimensions = {}, []
    for name in dimensions:
        props = objects.get(name, {})
        value = None
        points = None
        if bool_value(props, "Arbitrary"):
            value = first_number(string_value(props, "FormatSpec"))
        elif name in made_dimensions:
            dimension, view_name = made_dimensions[name]
            try:
                value = float(dimension.getRawValue())
                if dimension.Type in ("Distance", "DistanceX", "DistanceY"):
                    x, y = placed[view_name][:2]
                    points = [[round(x + p.x, 3), round(y - p.y, 3)]
                              for p in dimension.getLinearPoints()[:2]]
            except Exception:
                value = None
        if value is not None and not math.isfinite(value):
            value = None
        values[name] = value
        kind = int_value(props, "Type")
        refs = link_subs(props["References2D"]) if "References2D" in props else []
        at = None
        if refs and refs[0][0] in placed:
            x, y = placed[refs[0][0]][:2]
            dx, dy = float_value(props, "X"), float_value(props, "Y")
            if dx is not None and dy is not None:
                at = [round(x + dx, 3), round(y + dy, 3)]
        drawn_dimensions.append(dict(
            view=view_index.get(refs[0][0]) if refs else None, type=DIM_TYPES[kind] if kind is not None and 0 <= kind < len(DIM_TYPES)
            else "Unknown", value=value, line=points, at=at))
    drawn_views = []
    for name, view in drawn_made.items():
        x, y, scale, props, feature = drawn_placed[name]
        try:
            visible = page_lines(view.getVisibleEdges(), (x, y), budget)
            hidden = page_lines(view.getHiddenEdges(), (x, y), budget)
        except Exception:
            continue
        cut = []
        if types.get(name) == "TechDraw::DrawViewSection" and int_value(
                props, "CutSurfaceDisplay") in (2, 3):
            try:
                cut = cut_loops(feature.Shape, props, view, (x, y), scale, budget)
            except Exception:
                cut = []
        drawn_views.append(dict(view=view_index.get(name), visible=visible, hidden=hidden,
                                cut=cut))
    notes = []
    for name in members:
        props = objects.get(name, {})
        if types.get(name) == "TechDraw::DrawViewAnnotation" and "Text" in props:
            x, y = float_value(props, "X"), float_value(props, "Y")
            size = float_value(props, "TextSize")
            lines = [e.get("value") or "" for e in props["Text"].iter("String")]
            if x is not None and y is not None:
                notes.append(dict(at=[x, y], size=size if size and 0 < size < 100 else 5.0,
                                  lines=lines[:100]))
    drawing = dict(views=drawn_views, dimensions=drawn_dimensions, notes=notes,
                   truncated=budget.points < 0)
    return drawing, values
