# Trusted FCStd inspector, run by freecadcmd inside the judge's bubblewrap sandbox.
# It never opens the candidate as a FreeCAD document (openDocument would restore Python
# feature proxies, i.e. run code named by the file). It reads the zip with zipfile, the object
# list from Document.xml with a DOCTYPE-refusing parse, and each Part shape from its BREP member
# with OCCT's reader. Output: one line "DESKJSON {...}" on stdout.
import json
import os
import sys
import zipfile
import xml.etree.ElementTree as ET

LIMIT = 64 * 1024 * 1024


def report(**fields):
    sys.stdout.write("DESKJSON " + json.dumps(fields, sort_keys=True) + "\n")
    sys.stdout.flush()


def inspect(path):
    try:
        archive = zipfile.ZipFile(path)
        info = archive.getinfo("Document.xml")
    except Exception as error:
        return report(status="unreadable", reason="not an FCStd archive: %s" % type(error).__name__)
    if info.file_size > LIMIT:
        return report(status="unreadable", reason="Document.xml too large")
    text = archive.read("Document.xml")
    if b"<!DOCTYPE" in text or b"<!ENTITY" in text:
        return report(status="unreadable", reason="Document.xml declares a DOCTYPE")
    try:
        root = ET.fromstring(text)
    except ET.ParseError:
        return report(status="unreadable", reason="Document.xml is not XML")
    types = {}
    for obj in root.iter("Object"):
        if obj.get("type") is not None and obj.get("name") is not None:
            types[obj.get("name")] = obj.get("type")
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
    python = sorted(name for name, kind in types.items() if "Python" in kind)
    import Part

    solids = []
    for obj in root.iter("Object"):
        name = obj.get("name")
        if name is None or obj.get("type") is not None:
            continue
        kind = types.get(name, "")
        for prop in obj.iter("Property"):
            if prop.get("name") != "Shape":
                continue
            part = prop.find("Part")
            member = part.get("file") if part is not None else None
            if not member or not member.endswith(".brp"):
                continue
            try:
                entry = archive.getinfo(member)
            except KeyError:
                continue
            if entry.file_size > LIMIT:
                continue
            shape = Part.Shape()
            try:
                shape.importBrepFromString(archive.read(member).decode("latin-1"))
            except Exception:
                continue
            for solid in shape.Solids:
                box = solid.BoundBox
                solids.append({
                    "object": name, "type": kind, "valid": bool(solid.isValid()),
                    "volume": solid.Volume, "area": solid.Area,
                    "bbox": [box.XMin, box.YMin, box.ZMin, box.XMax, box.YMax, box.ZMax],
                })
    report(status="ok", objects=len(types), solids=solids, meshes=meshes,
           linked=sorted(set(linked)), python_features=python)


inspect(os.environ.get("DESK_CANDIDATE", "/in/candidate.FCStd"))
