# Trusted FCStd reader shared by the inspector and the judge, run by freecadcmd inside the judge's
# bubblewrap sandbox. It never opens a file as a FreeCAD document (openDocument would restore
# Python feature proxies, i.e. run code named by the file). It reads the zip with zipfile, the
# object list and properties from Document.xml with a DOCTYPE-refusing parse, and each Part shape
# from its BREP member with OCCT's reader. Over 400 lines: one script, because the inspector and
# the judge each run it as a single freecadcmd program (no imports of our own in the sandbox).
#
# The part (what a judge scores) is chosen from the document's objects, never from every stored
# shape: a PartDesign body stores a shape on every feature, so the body's shape (or its tip's when
# the body has none) stands for the part and the features inside its Group never do; bodies and
# every other shape object count when they are visible and no other shape object consumes them
# through a link (a Part Cut's Base and Tool, a Fuse's Shapes, an Extrusion's Base, a body's
# BaseFeature, ...). Containers' Group lists and attachment supports do not consume.
#
# Bounds (the sandbox adds rlimits behind them): every member is read through a capped stream,
# never trusting the size the zip declares; a member shared by many objects is loaded once; too
# many part solids or stored solids, or shape data over its caps, is refused as TooLarge and
# reported as status "resource_limit", like a MemoryError.
import json
import math
import sys
import zipfile
import xml.etree.ElementTree as ET

LIMIT = 64 * 1024 * 1024
# Document.xml (ElementTree holds several times its size in memory).
XML_LIMIT = 32 * 1024 * 1024
# All shape members of one file together.
TOTAL_LIMIT = 512 * 1024 * 1024
# Solids: in the part (they are fused), and stored on all objects together.
MAX_PART_SOLIDS = 256
MAX_SOLIDS = 2000
budget = {"left": TOTAL_LIMIT}
shapes_read = {}
# Link properties that place or group an object rather than consume it.
NOT_CONSUMING = ("Group", "Support", "AttachmentSupport", "Origin", "Tip", "_Body")


def report(**fields):
    # A leading newline: FreeCAD's progress output may leave the line unfinished.
    sys.stdout.write("\nDESKJSON " + json.dumps(fields, sort_keys=True) + "\n")
    sys.stdout.flush()


class Unreadable(Exception):
    pass


class TooLarge(Unreadable):
    """Over one of the reader's caps: reported as a resource limit."""


def refusal(error):
    """The facts for a file the reader refused or failed on."""
    if isinstance(error, TooLarge):
        return dict(status="resource_limit", reason=str(error))
    text = "%s %s" % (type(error).__name__, error)
    if isinstance(error, MemoryError) or "OutOfMemory" in text or "bad_alloc" in text:
        return dict(status="resource_limit", reason="out of memory: %s" % type(error).__name__)
    if isinstance(error, Unreadable):
        return dict(status="unreadable", reason=str(error))
    return dict(status="unreadable", reason="failed to read: %s" % type(error).__name__)


def read_member(archive, name, limit):
    """The member's bytes, read through a stream that stops past `limit` whatever size the zip
    declares (a member can lie about it)."""
    with archive.open(name) as stream:
        data = stream.read(limit + 1)
    if len(data) > limit:
        raise TooLarge("member %s is over %d bytes" % (name, limit))
    return data


def refuse_doctype(*_args):
    raise Unreadable("Document.xml declares a DOCTYPE or an entity")


def parse_xml(text):
    """Parses Document.xml in whatever encoding it declares; a DOCTYPE or entity declaration is
    refused by expat after decoding (a UTF-16 document hides it from a byte search), in a first
    pass of its own (ElementTree's C parser does not expose its expat handlers)."""
    import xml.parsers.expat

    check = xml.parsers.expat.ParserCreate()
    check.StartDoctypeDeclHandler = refuse_doctype
    check.EntityDeclHandler = refuse_doctype
    try:
        check.Parse(text, True)
        return ET.fromstring(text)
    except (xml.parsers.expat.ExpatError, ET.ParseError):
        raise Unreadable("Document.xml is not XML")


def python_content(root):
    """Every object, property or extension whose type names Python: FreeCAD would run or
    unpickle code for it on open (a plain Part::Feature can carry a PropertyPythonObject)."""
    found, seen = set(), set()
    for obj in root.iter("Object"):
        name = obj.get("name") or "?"
        for element in obj.iter():
            seen.add(id(element))
            if "Python" in (element.get("type") or ""):
                label = element.get("name") or element.tag
                found.add(name if element is obj else "%s.%s" % (name, label))
    for element in root.iter():
        if id(element) not in seen and "Python" in (element.get("type") or ""):
            found.add(element.get("name") or element.tag)
    return sorted(found)


def link_targets(prop):
    out = []
    for child in prop.iter():
        if child.tag in ("Link", "LinkSub"):
            for key in ("value", "obj"):
                if child.get(key):
                    out.append(child.get(key))
    return out


def read_document(path):
    """Returns (archive, types, objects) where objects maps name -> {props}, or raises."""
    try:
        archive = zipfile.ZipFile(path)
        info = archive.getinfo("Document.xml")
    except Exception as error:
        raise Unreadable("not an FCStd archive: %s" % type(error).__name__)
    try:
        text = read_member(archive, "Document.xml", XML_LIMIT)
    except TooLarge:
        raise
    except Exception as error:
        raise Unreadable("Document.xml does not decompress: %s" % type(error).__name__)
    if b"<!DOCTYPE" in text or b"<!ENTITY" in text:
        raise Unreadable("Document.xml declares a DOCTYPE or an entity")
    root = parse_xml(text)
    types = {}
    for obj in root.iter("Object"):
        if obj.get("type") is not None and obj.get("name") is not None:
            types[obj.get("name")] = obj.get("type")
    objects = {}
    for obj in root.iter("Object"):
        name = obj.get("name")
        if name is None or obj.get("type") is not None:
            continue
        props = {}
        for prop in obj.iter("Property"):
            props[prop.get("name")] = prop
        objects[name] = props
    return archive, types, objects, root


def load_shape(archive, prop):
    """The shape stored in the property's member: a BREP text (.brp) or FreeCAD's binary BREP
    (.bin, written when the SaveBinaryBrep preference is set), each member read once."""
    part = prop.find("Part") if prop is not None else None
    member = part.get("file") if part is not None else None
    if not member or not (member.endswith(".brp") or member.endswith(".bin")):
        return None
    if member in shapes_read:
        return shapes_read[member]
    try:
        archive.getinfo(member)
    except KeyError:
        return None
    import Part

    # A member that fails its CRC or does not decompress raises here: the file is unreadable.
    data = read_member(archive, member, min(LIMIT, budget["left"]))
    budget["left"] -= len(data)
    shape = Part.Shape()
    try:
        if member.endswith(".bin"):
            # OCCT's binary reader takes a file: the sandbox's own tmpfs.
            scratch = "/tmp/deskjudge-shape.bin"
            with open(scratch, "wb") as out:
                out.write(data)
            shape.importBinary(scratch)
        else:
            shape.importBrepFromString(data.decode("latin-1"))
    except MemoryError:
        raise
    except Exception:
        raise Unreadable("shape member %s is not a %s" % (
            member, "binary BREP" if member.endswith(".bin") else "BREP"))
    shapes_read[member] = shape
    return shape


def is_visible(props):
    prop = props.get("Visibility")
    if prop is None:
        return True
    flag = prop.find("Bool")
    return flag is None or flag.get("value") != "false"


def part_objects(types, objects):
    """The names of the objects whose shapes make up the part, in document order."""
    in_body = set()
    for name, props in objects.items():
        if types.get(name) == "PartDesign::Body":
            if "Group" in props:
                in_body.update(link_targets(props["Group"]))
    consumed = set()
    for name, props in objects.items():
        if "Shape" not in props or name in in_body:
            continue
        for prop_name, prop in props.items():
            kind = prop.get("type") or ""
            if "Link" in kind and prop_name not in NOT_CONSUMING:
                consumed.update(target for target in link_targets(prop) if target != name)
    chosen = []
    for name, props in objects.items():
        if name in in_body or "Shape" not in props:
            continue
        if name not in consumed and is_visible(props):
            chosen.append(name)
    return chosen


def body_shape(archive, types, objects, name):
    """The body's own shape, or its tip's when the body stores none."""
    props = objects[name]
    shape = load_shape(archive, props.get("Shape"))
    if (shape is None or not shape.Solids) and types.get(name) == "PartDesign::Body":
        tips = link_targets(props["Tip"]) if "Tip" in props else []
        if tips and tips[0] in objects:
            shape = load_shape(archive, objects[tips[0]].get("Shape"))
    return shape


def solid_facts(name, kind, solid):
    box = solid.BoundBox
    return {
        "object": name, "type": kind, "valid": bool(solid.isValid()),
        "volume": solid.Volume, "area": solid.Area,
        "bbox": [box.XMin, box.YMin, box.ZMin, box.XMax, box.YMax, box.ZMax],
    }


VIEW_KINDS = {
    "TechDraw::DrawViewPart": "part", "TechDraw::DrawProjGroupItem": "part",
    "TechDraw::DrawViewSection": "section", "TechDraw::DrawViewDetail": "detail",
}
DIM_TYPES = ["Distance", "DistanceX", "DistanceY", "DistanceZ", "Radius", "Diameter", "Angle",
             "Angle3Pt"]


def string_value(props, name):
    prop = props.get(name)
    element = prop.find("String") if prop is not None else None
    return element.get("value") if element is not None else None


def float_value(props, name):
    prop = props.get(name)
    element = prop.find("Float") if prop is not None else None
    if element is None:
        return None
    try:
        value = float(element.get("value"))
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def list_entries(props, name, entry):
    """Entries of a TechDraw list property (a view's CenterLines, CosmeticEdges), counted one
    by one: the stored count attribute is not trusted."""
    prop = props.get(name)
    return 0 if prop is None else sum(1 for _ in prop.iter(entry))


def dimension_facts(member, view_index):
    index = member.get("Type")
    index = index.find("Integer") if index is not None else None
    try:
        kind = DIM_TYPES[int(index.get("value"))]
    except (AttributeError, TypeError, ValueError, IndexError):
        kind = "Unknown"
    references = member.get("References2D")
    views = link_targets(references) if references is not None else []
    return dict(type=kind, view=view_index.get(views[0]) if views else None)


def page_size(types, objects, props):
    """The page's template Width and Height (mm) as stored, or None."""
    template = link_targets(props["Template"]) if "Template" in props else []
    if not template or not types.get(template[0], "").startswith("TechDraw::Draw"):
        return None
    template = objects.get(template[0], {})
    size = [float_value(template, "Width"), float_value(template, "Height")]
    return size if all(v is not None and v > 0 for v in size) else None


def sheet_facts(types, objects, archive=None):
    """Every TechDraw page: its label, page size, views (kind, direction, position on the
    page, scale, callouts), dimensions, hatches (hatch objects on its views and hatched section cut
    surfaces), notes. With the archive (the judge), the page labelled DRAW_LABEL is also
    recomputed (sheet_draw.py): its drawing, and each of its dimensions' value."""
    sheets = []
    for page, kind in types.items():
        if kind != "TechDraw::DrawPage" or page not in objects:
            continue
        props = objects[page]
        members = link_targets(props["Views"]) if "Views" in props else []
        # A projection group lists its own items; their X and Y are the group's plus theirs.
        offsets = {}
        for name in list(members):
            if types.get(name) == "TechDraw::DrawProjGroup" and "Views" in objects.get(name, {}):
                group = objects[name]
                for item in link_targets(group["Views"]):
                    members.append(item)
                    offsets[item] = (float_value(group, "X"), float_value(group, "Y"))
        views, dimensions, notes = [], [], []
        view_index = {}
        hatches = 0
        for name in members:
            member_kind = types.get(name, "")
            member = objects.get(name, {})
            if member_kind in VIEW_KINDS:
                vector = member.get("Direction")
                vector = vector.find("PropertyVector") if vector is not None else None
                if vector is None:
                    continue
                try:
                    direction = [float(vector.get(axis)) for axis in ("valueX", "valueY", "valueZ")]
                except (TypeError, ValueError):
                    continue
                position = [float_value(member, "X"), float_value(member, "Y")]
                base = offsets.get(name, (0.0, 0.0))
                if None in position or None in base:
                    position = None
                else:
                    position = [position[0] + base[0], position[1] + base[1]]
                view_index.setdefault(name, len(views))
                # Callouts: a section's symbol, a detail's reference, and the view's centre
                # lines and cosmetic edges (a symbol is kept as stored; the judge trims it).
                symbol = string_value(member, "SectionSymbol") \
                    if member_kind == "TechDraw::DrawViewSection" \
                    else string_value(member, "Reference") \
                    if member_kind == "TechDraw::DrawViewDetail" else None
                views.append(dict(kind=VIEW_KINDS[member_kind], direction=direction,
                                  position=position, scale=float_value(member, "Scale"),
                                  symbol=symbol,
                                  centre_lines=list_entries(member, "CenterLines", "CenterLine"),
                                  cosmetic_edges=list_entries(member, "CosmeticEdges",
                                                              "CosmeticEdge")))
                # A section's cut surface drawn with an SVG or PAT hatch counts as a hatch.
                display = member.get("CutSurfaceDisplay")
                display = display.find("Integer") if display is not None else None
                if member_kind == "TechDraw::DrawViewSection" and display is not None \
                        and display.get("value") in ("2", "3"):
                    hatches += 1
            elif member_kind == "TechDraw::DrawViewDimension":
                dimensions.append((name, member))
            elif member_kind == "TechDraw::DrawViewAnnotation" and "Text" in member:
                notes.extend(e.get("value") or "" for e in member["Text"].iter("String"))
            elif member_kind == "TechDraw::DrawRichAnno":
                notes.append(string_value(member, "AnnoText") or "")
        label = string_value(props, "Label") or page
        drawing, values = None, None
        if archive is not None and label == DRAW_LABEL:
            try:
                drawing, values = draw_page(archive, types, objects, members, offsets,
                                             view_index)
            except MemoryError:
                raise
            except Exception:
                drawing, values = None, None
        # A dimension's type and the view its first 2D reference names, and with a drawing its
        # value (FreeCAD stores none). Read after every view, whatever the page's order.
        dimensions = [dict(dimension_facts(member, view_index),
                           **({} if values is None else dict(value=values.get(name))))
                      for name, member in dimensions]
        for name, hatch_kind in types.items():
            if hatch_kind in ("TechDraw::DrawHatch", "TechDraw::DrawGeomHatch"):
                source = objects.get(name, {}).get("Source")
                if source is not None and set(link_targets(source)) & set(members):
                    hatches += 1
        extra = {} if drawing is None else dict(drawing=drawing)
        sheets.append(dict(label=label, views=views, **extra,
                           page_size=page_size(types, objects, props),
                           dimensions=sorted(dimensions, key=lambda d: (d["type"], d["view"] is None,
                                                                        d["view"] or 0)),
                           hatches=hatches,
                           notes=[" ".join(note.split()) for note in notes if note.strip()]))
    return sheets


def union_of(solids):
    """(shape, solids) of the part's union: its solids fused (touching or overlapping solids
    merge, so shared faces and volumes count once), or their compound when the fuse fails or
    loses volume."""
    import Part

    if len(solids) == 1:
        return solids[0], solids
    compound = Part.makeCompound(solids)
    try:
        fused = solids[0].multiFuse(solids[1:])
        if fused.Solids and fused.Volume >= (1.0 - 1e-6) * max(s.Volume for s in solids):
            return fused, fused.Solids
    except Exception:
        pass
    return compound, solids


def centre_of_mass(solids):
    """The volume-weighted mean of the solids' centres of mass."""
    import FreeCAD

    total = sum(s.Volume for s in solids)
    point = FreeCAD.Vector(0, 0, 0)
    for solid in solids:
        point = point.add(solid.CenterOfMass.multiply(solid.Volume / total))
    return point


def examine(path, draw=False):
    """Facts about one file, the part's solids (OCCT shapes) and the (shape, solids) of their
    union (None without a solid) for the judge; `draw` recomputes the DRAW_LABEL page."""
    budget["left"] = TOTAL_LIMIT
    shapes_read.clear()
    archive, types, objects, root = read_document(path)
    linked = sorted(
        name for name, kind in types.items()
        if kind.startswith("App::Link") or "XLink" in kind
    )
    for prop in root.iter("Property"):
        if "XLink" in (prop.get("type") or ""):
            for child in prop.iter():
                if child.get("file"):
                    linked.append(child.get("file"))
    meshes = sorted(name for name, kind in types.items() if kind.startswith("Mesh::"))
    python = python_content(root)
    with_shapes = sum(1 for props in objects.values()
                      if props.get("Shape") is not None and props["Shape"].find("Part") is not None)
    if with_shapes > MAX_SOLIDS:
        raise TooLarge("more than %d objects with a stored shape" % MAX_SOLIDS)
    solids = []
    for name, props in objects.items():
        shape = load_shape(archive, props.get("Shape"))
        if shape is not None:
            if len(solids) + len(shape.Solids) > MAX_SOLIDS:
                raise TooLarge("more than %d stored solids" % MAX_SOLIDS)
            solids.extend(solid_facts(name, types.get(name, ""), s) for s in shape.Solids)
    part = []
    part_shapes = []
    n_shapes = 0
    for name in part_objects(types, objects):
        shape = body_shape(archive, types, objects, name)
        if shape is None:
            continue
        if not shape.isNull():
            n_shapes += 1
        if len(part_shapes) + len(shape.Solids) > MAX_PART_SOLIDS:
            raise TooLarge("more than %d part solids" % MAX_PART_SOLIDS)
        for solid in shape.Solids:
            part.append(solid_facts(name, types.get(name, ""), solid))
            part_shapes.append(solid)
    union = union_of(part_shapes) if part_shapes else None
    measures = dict(volume=sum(s.Volume for s in union[1]), area=union[0].Area) if union else None
    facts = dict(status="ok", objects=len(types), solids=solids, part=part,
                 part_shapes=n_shapes, meshes=meshes, linked=sorted(set(linked)),
                 python_content=python,
                 sheets=sheet_facts(types, objects, archive if draw and not python else None),
                 union=measures)
    return facts, part_shapes, union
