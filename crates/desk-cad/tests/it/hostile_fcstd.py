# Test helper, run with the system python3: hostile FCStd files made from a trusted gold
# (argv[1], one Part::Feature "Part" with its shape in PartShape.brp) into the directory argv[2].
import os
import struct
import sys
import zipfile
import zlib

gold, out = sys.argv[1], sys.argv[2]
source = zipfile.ZipFile(gold)
xml = source.read("Document.xml").decode("utf-8")
brep = source.read("PartShape.brp")


def write(name, members):
    with zipfile.ZipFile(os.path.join(out, name), "w", zipfile.ZIP_DEFLATED) as archive:
        for member, data in members:
            archive.writestr(member, data)


# 3,000 objects all pointing at one small shape member (about 33 KB compressed).
n = 3000
objects = "".join('<Object type="Part::Feature" name="P%d" id="%d"/>' % (i, i) for i in range(n))
data = "".join(
    '<Object name="P%d"><Properties Count="1"><Property name="Shape" '
    'type="Part::PropertyPartShape"><Part file="PartShape.brp"/></Property></Properties>'
    '</Object>' % i for i in range(n))
doc = ('<?xml version="1.0" encoding="utf-8"?><Document SchemaVersion="4"><Objects Count="%d">%s'
       '</Objects><ObjectData Count="%d">%s</ObjectData></Document>' % (n, objects, n, data))
write("many-objects.FCStd", [("Document.xml", doc), ("PartShape.brp", brep)])

# A decompression bomb: a 3 GiB shape member of spaces (3 MB deflated); "honest" declares its
# size, "lying" declares 1,000 bytes in both headers.
SIZE = 3 << 30


def deflated(data):
    compressor = zlib.compressobj(6, zlib.DEFLATED, -15)
    return compressor.compress(data) + compressor.flush()


def raw_zip(path, members):
    """A zip written by hand: (name, crc, compressed body, declared size) per deflated member."""
    with open(path, "wb") as f:
        central = b""
        for name, crc, body, size in members:
            offset, encoded = f.tell(), name.encode()
            f.write(struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 8, 0, 0, crc, len(body), size,
                                len(encoded), 0) + encoded)
            f.write(body)
            central += struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, 8, 0, 0, crc,
                                   len(body), size, len(encoded), 0, 0, 0, 0, 0, offset) + encoded
        start = f.tell()
        f.write(central)
        f.write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members),
                            len(central), start, 0))


chunk = b" " * (1 << 24)
compressor = zlib.compressobj(1, zlib.DEFLATED, -15)
bomb_body = b"".join(compressor.compress(chunk) for _ in range(SIZE // len(chunk)))
bomb_body += compressor.flush()
bomb_crc = 0
for _ in range(SIZE // len(chunk)):
    bomb_crc = zlib.crc32(chunk, bomb_crc)
document = xml.encode("utf-8")
for name, declared in (("bomb-honest.FCStd", SIZE), ("bomb-lying.FCStd", 1000)):
    raw_zip(os.path.join(out, name), [
        ("Document.xml", zlib.crc32(document), deflated(document), len(document)),
        ("PartShape.brp", bomb_crc, bomb_body, declared),
    ])

# UTF-16 Document.xml: the gold as is, and with a DOCTYPE declaring an entity.
utf16 = xml.replace('encoding="utf-8"', 'encoding="UTF-16"').replace(
    "encoding='utf-8'", "encoding='UTF-16'")
assert "UTF-16" in utf16, xml[:100]
write("utf16.FCStd", [("Document.xml", utf16.encode("utf-16")), ("PartShape.brp", brep)])
head, rest = utf16.split("?>", 1)
doctype = head + '?><!DOCTYPE Document [<!ENTITY a "aaaaaaaaaa">]>' + rest
write("utf16-doctype.FCStd", [("Document.xml", doctype.encode("utf-16")),
                              ("PartShape.brp", brep)])

# A plain Part::Feature carrying a Python-object property (FreeCAD unpickles it on open).
marker = '<Property name="Shape" type="Part::PropertyPartShape"'
assert marker in xml
pickled = ('<Property name="Trap" type="App::PropertyPythonObject" status="1">'
           '<Python value="eyJ4IjogMX0=" encoded="yes" module="os" class="system"/></Property>')
write("python-property.FCStd", [("Document.xml", xml.replace(marker, pickled + marker, 1)),
                                ("PartShape.brp", brep)])
print("made")
