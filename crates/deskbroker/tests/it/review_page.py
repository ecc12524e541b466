"""Drives headless Chromium over the DevTools protocol on a pipe (--remote-debugging-pipe):
loads the broker's review page, types the reviewer credential, clicks Load, then clicks the
Allow button of the review named on the command line with real mouse events, waits until the
page says the decision was recorded, and saves a PNG of the page.

usage: review_page.py CHROMIUM URL CREDENTIAL REVIEW_ID OUT_PNG
Prints "recorded" on success; exits non-zero with a reason otherwise."""

import base64
import json
import os
import subprocess
import sys
import tempfile
import time

chromium, url, credential, review_id, out_png = sys.argv[1:6]
to_child_r, to_child_w = os.pipe()
from_child_r, from_child_w = os.pipe()


def child_fds():
    # Through fresh descriptors first: the pipe's own may be 3 or 4 themselves.
    read_end, write_end = os.dup(to_child_r), os.dup(from_child_w)
    os.dup2(read_end, 3)
    os.dup2(write_end, 4)


profile = tempfile.mkdtemp(prefix="review-page-")
proc = subprocess.Popen(
    [chromium, "--headless=new", "--remote-debugging-pipe", "--no-sandbox",
     "--disable-gpu", "--no-first-run", "--user-data-dir=" + profile,
     "--window-size=1100,900", "about:blank"],
    preexec_fn=child_fds, close_fds=False,
    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
os.close(to_child_r)
os.close(from_child_w)
writer = os.fdopen(to_child_w, "wb", buffering=0)
reader = os.fdopen(from_child_r, "rb", buffering=0)
buffer = b""
next_id = 0


def send(method, params=None, session=None):
    global next_id, buffer
    next_id += 1
    message = {"id": next_id, "method": method, "params": params or {}}
    if session:
        message["sessionId"] = session
    writer.write(json.dumps(message).encode() + b"\0")
    while True:
        while b"\0" not in buffer:
            chunk = reader.read(65536)
            if not chunk:
                raise SystemExit("chromium closed the pipe")
            buffer += chunk
        raw, buffer = buffer.split(b"\0", 1)
        answer = json.loads(raw)
        if answer.get("id") == next_id:
            if "error" in answer:
                raise SystemExit(f"{method}: {answer['error']}")
            return answer["result"]


def evaluate(session, expression):
    result = send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                       "awaitPromise": True}, session)
    return result["result"].get("value")


def wait_for(session, expression, what, seconds=20):
    deadline = time.time() + seconds
    while time.time() < deadline:
        value = evaluate(session, expression)
        if value:
            return value
        time.sleep(0.2)
    status = evaluate(session, "document.getElementById('status').textContent")
    raise SystemExit(f"timed out waiting for {what}; page status: {status!r}")


def click(session, selector):
    box = wait_for(session, f"""(() => {{ const e = document.querySelector({json.dumps(selector)});
        if (!e) return null; e.scrollIntoView(); const r = e.getBoundingClientRect();
        return [r.x + r.width / 2, r.y + r.height / 2]; }})()""", selector)
    for kind in ("mousePressed", "mouseReleased"):
        send("Input.dispatchMouseEvent", {"type": kind, "x": box[0], "y": box[1],
                                          "button": "left", "clickCount": 1}, session)


try:
    targets = send("Target.getTargets")["targetInfos"]
    page = next(t for t in targets if t["type"] == "page")
    session = send("Target.attachToTarget", {"targetId": page["targetId"], "flatten": True})["sessionId"]
    send("Page.enable", session=session)
    send("Page.navigate", {"url": url}, session)
    wait_for(session, "document.readyState === 'complete' && !!document.getElementById('load')", "the page")
    click(session, "#credential")
    send("Input.insertText", {"text": credential}, session)
    click(session, "#load")
    selector = f"#review-{review_id} .decide-allow"
    wait_for(session, f"!!document.querySelector({json.dumps(selector)})", "the review's Allow button")
    click(session, selector)
    wait_for(session, f"document.getElementById('status').textContent.startsWith('recorded: allow {review_id}')", "the decision")
    wait_for(session, "Array.from(document.images).every(i => i.complete)", "the frames")
    shot = send("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True}, session)
    with open(out_png, "wb") as out:
        out.write(base64.b64decode(shot["data"]))
    print("recorded")
finally:
    try:
        send("Browser.close")
    except BaseException:
        pass
    proc.kill()
    proc.wait()
