"""Chromium over the Chrome DevTools protocol."""
import base64
import json
import os
import subprocess
import urllib.request

import websocket  # python3-websocket

from .harness import BASE, PASSWORD, Failure, check, wait_for


class Browser:
    """One headless chromium with a profile of its own (so one login), its page driven over CDP."""

    def __init__(self, name, work):
        self.name, self.shots = name, work.shots
        profile = f"{work.directory}/chromium-{name}"
        # --ignore-certificate-errors: a person clicks through the warning about Cockpit's
        # self-signed certificate (the test checks first that it is the one Cockpit made).
        self.process = subprocess.Popen(["chromium", "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run", "--remote-debugging-port=0",
                                         "--ignore-certificate-errors",
                                         f"--user-data-dir={profile}", "--window-size=1280,1700", "about:blank"],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        port_file = profile + "/DevToolsActivePort"
        wait_for(lambda: os.path.exists(port_file) and open(port_file).read().strip(), "chromium's DevTools port")
        port = open(port_file).read().split()[0]
        targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list"))
        page = next(target for target in targets if target["type"] == "page")
        self.socket = websocket.create_connection(page["webSocketDebuggerUrl"], timeout=30)
        self.next_id, self.frames, self.exceptions = 0, [], []
        self.send("Page.enable")
        self.send("Runtime.enable")
        self.send("Network.enable")

    def send(self, method, **params):
        self.next_id += 1
        self.socket.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            message = json.loads(self.socket.recv())
            if message.get("method") in ("Network.webSocketFrameReceived", "Network.webSocketFrameSent"):
                self.frames.append(message["params"]["response"]["payloadData"])
            elif message.get("method") == "Runtime.exceptionThrown":
                self.exceptions.append(message["params"]["exceptionDetails"])
            if message.get("id") == self.next_id:
                if "error" in message:
                    raise Failure(f"{method}: {message['error']}")
                return message["result"]

    def evaluate(self, expression):
        result = self.send("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise Failure(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def wait(self, expression, what, timeout=20):
        def holds():
            try:
                return self.evaluate(expression)
            except Failure:  # the page is between two documents
                return False
        try:
            return wait_for(holds, f"{self.name}: {what}", timeout)
        except Failure as failure:
            raise Failure(f"{failure}; the page says: {self.evaluate('document.body.innerText')[:400]!r}")

    def open(self, url):
        self.send("Page.navigate", url=url)
        self.wait("document.readyState === 'complete'", f"{url} to load")

    def log_in(self, user):
        self.open(BASE + "/")
        # The form is in the page from the start, hidden until login.js has set it up (Cockpit 337's
        # attaches the button's handler only then: a click before it does nothing).
        self.wait("!!document.getElementById('login-user-input') && !document.getElementById('login').hidden", "the login form")
        check(self.evaluate("location.protocol") == "https:", f"{self.name}: Cockpit's login page, over https")
        self.screenshot(f"login-{self.name}")
        self.evaluate(f"""document.getElementById('login-user-input').value = {json.dumps(user[0])};
                          document.getElementById('login-password-input').value = {json.dumps(PASSWORD)};
                          document.getElementById('login-button').click()""")
        self.wait("location.pathname !== '/' && !document.getElementById('login-user-input')", "the login", timeout=30)

    def screenshot(self, name):
        path = f"{self.shots}/{name}.png"
        with open(path, "wb") as f:
            f.write(base64.b64decode(self.send("Page.captureScreenshot", format="png", captureBeyondViewport=True)["data"]))
        print(f"screenshot: {path}")

    def close(self):
        own = [exception for exception in self.exceptions if "/enagent/" in json.dumps(exception)]
        check(not own, f"{self.name}: the page threw nothing: {own}")
        self.socket.close()
        self.process.terminate()
        self.process.wait()
