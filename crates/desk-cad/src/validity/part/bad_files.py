# Trusted maker of judge-validity files, run by freecadcmd inside the judge's sandbox. Input:
# /in/gold.FCStd, a gold made by desk-cad's own builder (one Part::Feature "Part" and its
# Layout1 sheet). Output in /out: a mesh of the gold alone, the gold's solid beside a
# Part::FeaturePython, a lone face, the gold with its solid hidden (the sheet alone), and the
# gold with one flipped byte in its stored shape member (the zip's CRC check fails); and the
# gold's sheet perturbed (below the gold, not zero): its first two views' X/Y exchanged, every
# view at the page's centre, its first view at twice its scale, its first dimension moved to
# another view, its first dimension showing a wrong value (re-referenced to another edge of its
# view that measures over 5 % differently, or failing one, an arbitrary text 25 % off), every view
# drawing its hidden edges, a centre line added to its first view, and, when the gold has a
# section view, that section's cut surface no longer hatched, and its symbol changed.
import zipfile

import FreeCAD
import Mesh
import Part

GOLD = "/in/gold.FCStd"
shape = Part.Shape()
shape.importBrepFromString(zipfile.ZipFile(GOLD).read("PartShape.brp").decode("latin-1"))

mesh = FreeCAD.newDocument("mesh")
mesh.addObject("Mesh::Feature", "Mesh").Mesh = Mesh.Mesh(shape.tessellate(0.05))
mesh.saveAs("/out/mesh.FCStd")


class Trap:
    def __init__(self, obj):
        obj.Proxy = self


trap = FreeCAD.newDocument("trap")
trap.addObject("Part::Feature", "Part").Shape = shape
Trap(trap.addObject("Part::FeaturePython", "Trap"))
trap.saveAs("/out/python-feature.FCStd")

flat = FreeCAD.newDocument("flat")
flat.addObject("Part::Feature", "Face").Shape = Part.makePlane(40, 30)
flat.saveAs("/out/face-only.FCStd")

sheet = FreeCAD.openDocument(GOLD)
sheet.getObject("Part").Visibility = False
sheet.saveAs("/out/sheet-only.FCStd")



def sheet_case(out, change):
    """The gold with `change` applied to its Layout1 views (in page order), saved unrecomputed."""
    document = FreeCAD.openDocument(GOLD)
    page = [o for o in document.Objects if o.TypeId == "TechDraw::DrawPage"][0]
    views = [v for v in page.Views
             if v.TypeId in ("TechDraw::DrawViewPart", "TechDraw::DrawViewSection")]
    change(page, views)
    document.saveAs(out)
    FreeCAD.closeDocument(document.Name)


def mm(value):
    return float(getattr(value, "Value", value))


def swap(page, views):
    (a, b) = views[:2]
    a.X, a.Y, b.X, b.Y = mm(b.X), mm(b.Y), mm(a.X), mm(a.Y)


def stack(page, views):
    template = page.Template
    for view in views:
        view.X, view.Y = mm(template.Width) / 2, mm(template.Height) / 2


def rescale(page, views):
    scale = float(views[0].Scale)
    views[0].ScaleType = "Custom"
    views[0].Scale = 2 * scale


def move_dimension(page, views):
    """The first dimension's reference moved to the same-named edge of another view."""
    dimension = [v for v in page.Views if v.TypeId == "TechDraw::DrawViewDimension"][0]
    view, sub = dimension.References2D[0]
    sub = sub[0] if isinstance(sub, (list, tuple)) else sub
    target = views[1] if view == views[0] else views[0]
    dimension.References2D = [(target, sub)]


def measure(kind, edge):
    """What a dimension of `kind` on this one view edge shows (view edges are unscaled)."""
    a, b = edge.Vertexes[0].Point, edge.Vertexes[-1].Point
    straight = abs(edge.Length - a.distanceToPoint(b)) < 1e-6 * max(1.0, edge.Length)
    if kind == "DistanceX" and straight:
        return abs(a.x - b.x)
    if kind == "DistanceY" and straight:
        return abs(a.y - b.y)
    if kind == "Distance" and straight:
        return edge.Length
    if kind in ("Diameter", "Radius") and isinstance(edge.Curve, Part.Circle):
        return edge.Curve.Radius * (2 if kind == "Diameter" else 1)
    return None


def wrong_value(page, views):
    """The first dimension on another edge of its view whose measure is over 5 % (and 0.5 mm)
    off; without one, an arbitrary text 25 % off its value."""
    document = page.Document
    for view in views:
        view.touch()
    document.recompute()
    dimension = [v for v in page.Views if v.TypeId == "TechDraw::DrawViewDimension"][0]
    view, sub = dimension.References2D[0]
    sub = sub[0] if isinstance(sub, (list, tuple)) else sub
    value = float(dimension.getRawValue())
    index = 0
    while True:
        try:
            edge = view.getEdgeByIndex(index)
        except Exception:
            break
        if edge is None:
            break
        other = measure(dimension.Type, edge)
        if other is not None and abs(other - value) > max(0.05 * value, 0.5):
            dimension.References2D = [(view, "Edge%d" % index)]
            return
        index += 1
    dimension.Arbitrary = True
    dimension.FormatSpec = "%.2f" % (1.25 * value)


def hidden_shown(page, views):
    """Every view draws its hidden edges (the golds show none)."""
    for view in views:
        view.HardHidden = True


def centre_line_added(page, views):
    """A centre line on the first view (of its first face; failing that, through its first two
    vertices): the golds draw none."""
    page.Document.recompute()
    try:
        views[0].makeCenterLine(["Face0"], 0)
    except Exception:
        views[0].makeCenterLine(["Vertex0", "Vertex1"], 0)


def symbol_changed(page, views):
    """The section's identifier another letter ("A" becomes "B")."""
    for view in views:
        if view.TypeId == "TechDraw::DrawViewSection":
            view.SectionSymbol = "C" if view.SectionSymbol.strip() == "B" else "B"


def hatch_removed(page, views):
    for view in views:
        if view.TypeId == "TechDraw::DrawViewSection":
            view.CutSurfaceDisplay = "Hide"


FreeCAD.closeDocument(sheet.Name)
sheet_case("/out/views-swapped.FCStd", swap)
sheet_case("/out/views-stacked.FCStd", stack)
sheet_case("/out/view-rescaled.FCStd", rescale)
sheet_case("/out/dimension-moved.FCStd", move_dimension)
sheet_case("/out/dimension-value.FCStd", wrong_value)
sheet_case("/out/hidden-shown.FCStd", hidden_shown)
sheet_case("/out/centre-line-added.FCStd", centre_line_added)
gold_document = FreeCAD.openDocument(GOLD)
has_section = any(o.TypeId == "TechDraw::DrawViewSection" for o in gold_document.Objects)
FreeCAD.closeDocument(gold_document.Name)
if has_section:
    sheet_case("/out/hatch-removed.FCStd", hatch_removed)
    sheet_case("/out/symbol-changed.FCStd", symbol_changed)

source = zipfile.ZipFile(GOLD)
path = "/out/corrupt-member.FCStd"
with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as out:
    for info in source.infolist():
        out.writestr(info.filename, source.read(info.filename))
info = zipfile.ZipFile(path).getinfo("PartShape.brp")
raw = bytearray(open(path, "rb").read())
raw[info.header_offset + 30 + len(info.filename) + len(info.extra) + 100] ^= 0xFF
open(path, "wb").write(bytes(raw))
print("\nDESKJSON {\"status\": \"ok\"}")
