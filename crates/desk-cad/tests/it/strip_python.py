# Test helper, run with the system python3 on trusted files: copies the FCStd argv[1] to argv[2]
# without its Python-typed objects and properties (the judge refuses those in a candidate), so
# the rest of a real file can be scored against itself. Prints how many objects it removed.
import sys
import zipfile
import xml.etree.ElementTree as ET

source, target = sys.argv[1], sys.argv[2]
archive = zipfile.ZipFile(source)
root = ET.fromstring(archive.read("Document.xml"))
removed = set()
for objects in root.iter("Objects"):
    for obj in list(objects):
        if "Python" in (obj.get("type") or ""):
            removed.add(obj.get("name"))
            objects.remove(obj)
for data in root.iter("ObjectData"):
    for obj in list(data):
        if obj.get("name") in removed:
            data.remove(obj)
            continue
        for props in obj.iter("Properties"):
            for prop in list(props):
                if "Python" in (prop.get("type") or ""):
                    props.remove(prop)
with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as out:
    for info in archive.infolist():
        if info.filename == "Document.xml":
            out.writestr(info.filename, ET.tostring(root, encoding="utf-8", xml_declaration=True))
        else:
            out.writestr(info.filename, archive.read(info.filename))
print(len(removed))
