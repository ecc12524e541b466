# Trusted gold builder, run by freecadcmd inside the judge's sandbox. Input: /in/spec.json
# ({"spec": PartSpec, "views": [[name, view direction, right direction, orthographic?,
# section plane Y or null], ...]}) written by
# desk-cad's generator, never candidate data. It builds the part with FreeCAD's Part module
# (base extrusion or revolve, edge finish, then each hole and pocket as a boolean cut), saves it
# as one Part::Feature in /out/gold.FCStd with its TechDraw presentation sheet when the request
# has one ("sheet": {"name", "views": [[name, direction, right, dimensioned?, section plane
# Y or null]], "notes"}; a section view's base is the sheet's top or bottom view), and
# projects it with OCCT's hidden-line removal
# (TechDraw.projectEx) for every view. Output: one line "DESKJSON {...}" with the views' visible
# and hidden edges (orthographic views only, none in a section) as polylines in view
# coordinates (mm, rounded to 0.001; a straight edge is its two end points), and a section's cut
# faces as closed loops.
import json
import sys

import FreeCAD
import Part
import TechDraw
from FreeCAD import Vector as V


def out(**fields):
    # A leading newline: FreeCAD's progress output may leave the line unfinished.
    sys.stdout.write("\nDESKJSON " + json.dumps(fields, sort_keys=True) + "\n")
    sys.stdout.flush()


def base_shape(base):
    kind = base["kind"]
    if kind == "extrude_xy":
        points = [V(x, y, 0) for x, y in base["profile"]]
        direction = V(0, 0, base["height"])
    elif kind == "extrude_xz":
        points = [V(x, 0, z) for x, z in base["profile"]]
        direction = V(0, base["depth"], 0)
    else:
        points = [V(r, 0, z) for r, z in base["profile"]]
        direction = None
    face = Part.Face(Part.makePolygon(points + [points[0]]))
    if direction is None:
        return face.revolve(V(0, 0, 0), V(0, 0, 1), 360), points, None
    return face.extrude(direction), points, direction


def finish(shape, points, direction, spec):
    if spec is None or direction is None:
        return shape
    axis = V(direction).normalize()
    corners = [points[i] for i in spec["corners"]]
    edges = []
    for edge in shape.Edges:
        if not isinstance(edge.Curve, Part.Line):
            continue
        start, end = edge.Vertexes[0].Point, edge.Vertexes[-1].Point
        along = end.sub(start)
        if along.cross(axis).Length > 1e-7:
            continue
        for corner in corners:
            if start.sub(corner).cross(axis).Length < 1e-7:
                edges.append(edge)
                break
    if spec["kind"] == "fillet":
        return shape.makeFillet(spec["size"], edges)
    return shape.makeChamfer(spec["size"], edges)


AXES = {"x": V(1, 0, 0), "y": V(0, 1, 0), "z": V(0, 0, 1),
        "neg_x": V(-1, 0, 0), "neg_y": V(0, -1, 0), "neg_z": V(0, 0, -1)}


def cut(shape, feature):
    if feature["kind"] == "hole":
        tool = Part.makeCylinder(feature["diameter"] / 2.0, feature["depth"],
                                 V(*feature["start"]), AXES[feature["axis"]])
    else:
        tool = Part.makeBox(*feature["size"], V(*feature["min"]))
    return shape.cut(tool)


def polylines(compound):
    lines = []
    if compound is None:
        return lines
    for edge in compound.Edges:
        ends = straight(edge)
        if ends:
            points = list(ends)
        else:
            count = max(2, min(240, int(edge.Length / 0.5) + 2))
            points = edge.discretize(Number=count)
        lines.append([[round(p.x, 3), round(p.y, 3)] for p in points])
    lines.sort()
    return lines


def frame(direction, right):
    d = V(*direction).normalize()
    r = V(*right).normalize()
    return d, r, d.cross(r)


def is_plan(direction):
    """A top or bottom view (looking along Z), not merely one with a Z component."""
    d = V(*direction).normalize()
    return abs(abs(d.z) - 1) < 1e-9


def loop_points(wire, r, u):
    """A closed wire as one ordered polyline in view coordinates."""
    points = []
    for edge in wire.OrderedEdges:
        ends = straight(edge)
        if ends:
            piece = list(ends)
        else:
            count = max(2, min(240, int(edge.Length / 0.5) + 2))
            piece = edge.discretize(Number=count)
        if points and piece[0].distanceToPoint(points[-1]) > piece[-1].distanceToPoint(points[-1]):
            piece.reverse()
        points.extend(piece if not points else piece[1:])
    return [[round(p.dot(r), 3), round(p.dot(u), 3)] for p in points]


def section(shape, plane_y, direction, right):
    """The part behind the plane Y = plane_y and its cut faces (loops in view coordinates)."""
    _d, r, u = frame(direction, right)
    kept = shape.common(Part.makeBox(1e4, 1e4, 1e4, V(-5e3, plane_y, -5e3)))
    cut = []
    for face in kept.Faces:
        box = face.BoundBox
        if abs(box.YMin - plane_y) < 1e-6 and abs(box.YMax - plane_y) < 1e-6:
            cut.append([loop_points(wire, r, u) for wire in face.Wires])
    cut.sort()
    return kept, cut


def project(shape, direction, right):
    d, r, u = frame(direction, right)
    matrix = FreeCAD.Matrix(r.x, r.y, r.z, 0, u.x, u.y, u.z, 0, d.x, d.y, d.z, 0, 0, 0, 0, 1)
    turned = shape.transformGeometry(matrix)
    result = TechDraw.projectEx(turned, V(0, 0, 1))
    visible = polylines(result[0]) + polylines(result[3])
    hidden = polylines(result[5]) + polylines(result[8])
    return sorted(visible), sorted(hidden)


TEMPLATE = "/usr/share/freecad/Mod/TechDraw/Templates/A3_Landscape_blank.svg"


def edge_named(view, pick):
    """The name of the view edge `pick` scores highest (None when none qualifies)."""
    best = None
    index = 0
    while True:
        try:
            edge = view.getEdgeByIndex(index)
        except Exception:
            break
        if edge is None:
            break
        value = pick(edge)
        if value is not None and (best is None or value > best[0] + 1e-9):
            best = (value, "Edge%d" % index)
        index += 1
    return best[1] if best else None


def straight(edge):
    """The end points of a straight edge (projected lines may come back as B-splines)."""
    a, b = edge.Vertexes[0].Point, edge.Vertexes[-1].Point
    if abs(edge.Length - a.distanceToPoint(b)) < 1e-6 * max(1.0, edge.Length):
        return a, b
    return None


def horizontal(edge):
    ends = straight(edge)
    if ends and abs(ends[0].y - ends[1].y) < 1e-6:
        return abs(ends[0].x - ends[1].x)
    return None


def vertical(edge):
    ends = straight(edge)
    if ends and abs(ends[0].x - ends[1].x) < 1e-6:
        return abs(ends[0].y - ends[1].y)
    return None


def circle(edge):
    if isinstance(edge.Curve, Part.Circle) and edge.isClosed():
        return edge.Curve.Radius
    return None


def sheet(document, part, request):
    """The presentation sheet: one part view per reference view, the overall sizes (and the
    largest hole) of each orthographic view dimensioned, and the notes."""
    page = document.addObject("TechDraw::DrawPage", "Page")
    page.Label = request["name"]
    template = document.addObject("TechDraw::DrawSVGTemplate", "Template")
    template.Template = TEMPLATE
    page.Template = template
    views = []
    plan = None
    # Part views first: a section view needs its base view.
    ordered = sorted(enumerate(request["views"]), key=lambda item: item[1][4] is not None)
    for index, (name, direction, right, dimensioned, plane_y, symbol) in ordered:
        kind = "TechDraw::DrawViewPart" if plane_y is None else "TechDraw::DrawViewSection"
        view = document.addObject(kind, "View%d" % index)
        page.addView(view)
        view.Source = [part]
        if plane_y is not None:
            view.BaseView = plan
            # The normal along the view direction keeps the half behind the plane, as the
            # reference's section (`section`) and TechDraw's Section tool do; its negative
            # showed the uncut outside of the near half.
            view.SectionNormal = V(*direction)
            view.SectionOrigin = V(0, plane_y, 0)
            view.SectionSymbol = symbol
        view.Direction = V(*direction)
        view.XDirection = V(*right)
        view.Label = name
        view.X, view.Y = 100 + 200 * (index % 2), 200 - 120 * (index // 2)
        if plane_y is None and is_plan(direction) and plan is None:
            plan = view
        views.append((view, dimensioned))
        document.recompute()
    count = 0
    for view, dimensioned in views:
        if not dimensioned:
            continue
        for kind, pick in (("DistanceX", horizontal), ("DistanceY", vertical),
                           ("Diameter", circle)):
            edge = edge_named(view, pick)
            if edge is None:
                continue
            dimension = document.addObject("TechDraw::DrawViewDimension", "Dimension%d" % count)
            count += 1
            dimension.Type = kind
            dimension.References2D = [(view, edge)]
            page.addView(dimension)
    if request["notes"]:
        note = document.addObject("TechDraw::DrawViewAnnotation", "Notes")
        note.Text = request["notes"]
        page.addView(note)
    document.recompute()


def build():
    request = json.load(open("/in/spec.json"))
    spec = request["spec"]
    shape, points, direction = base_shape(spec["base"])
    shape = finish(shape, points, direction, spec.get("finish"))
    for feature in spec["features"]:
        shape = cut(shape, feature)
    shape = shape.removeSplitter()
    solids = shape.Solids
    if len(solids) != 1 or not solids[0].isValid():
        return out(status="failed", reason="the part is not one valid solid")
    solid = solids[0]
    document = FreeCAD.newDocument("gold")
    part = document.addObject("Part::Feature", "Part")
    part.Shape = solid
    document.recompute()
    if request["sheet"] is not None:
        sheet(document, part, request["sheet"])
    document.saveAs("/out/gold.FCStd")
    views = []
    planes = [view[4] for view in request["views"] if view[4] is not None]
    for name, view_direction, right, orthographic, plane_y, _symbol in request["views"]:
        cut_faces = []
        shape = solid
        if plane_y is not None:
            shape, cut_faces = section(solid, plane_y, view_direction, right)
        visible, hidden = project(shape, view_direction, right)
        shown_hidden = hidden if orthographic and plane_y is None else []
        # A top or bottom view shows where a section cuts: the plane Y = c at view y = c * u.y.
        cutting = None
        if planes and is_plan(view_direction):
            cutting = round(planes[0] * frame(view_direction, right)[2].y, 3)
        views.append(dict(name=name, orthographic=orthographic, visible=visible,
                          hidden=shown_hidden, cut=cut_faces, cutting_plane=cutting))
    out(status="ok", volume=solid.Volume, views=views)


build()
