// Requests that are wrong before any parameter is read — malformed multipart
// bodies, URLs that do not decode, path segments or headers too long, broken
// HTTP framing — answered with Zulip's error JSON like every other error; and
// the /thumbnail endpoint, which redirects to this server's own uploads and
// sends other sites' images to the image proxy.
// Raw sockets where fetch would fix up or refuse what is sent.
import assert from "node:assert/strict";
import net from "node:net";
import { after, before, describe, test } from "node:test";
import { assertError, assertSuccess, basicAuth, startTestApp, uniqueName, type TestApp } from "./helpers.ts";

let t: TestApp;
before(async () => {
  t = await startTestApp();
});
after(() => t.close());

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  text: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  body: any;
}

/**
 * Writes bytes to a fresh connection and parses the first response. The
 * requests say Connection: close; `halfClose` ends the sending side at once
 * (how a body is cut short — Node drops a response still being prepared).
 */
function rawRequest(bytes: string | Buffer, halfClose = false): Promise<RawResponse> {
  const { hostname, port } = new URL(t.url);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = net.connect(Number(port), hostname, () => (halfClose ? socket.end(bytes) : socket.write(bytes)));
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("error", () => {
      // A reset after the answer; the answer is what counts.
    });
    socket.setTimeout(10_000, () => socket.destroy());
    socket.on("close", () => {
      const data = Buffer.concat(chunks).toString("latin1");
      const end = data.indexOf("\r\n\r\n");
      if (end < 0) return reject(new Error(`no response: ${JSON.stringify(data)}`));
      const [statusLine, ...headerLines] = data.slice(0, end).split("\r\n");
      const headers: Record<string, string> = {};
      for (const line of headerLines) headers[line.slice(0, line.indexOf(":")).toLowerCase()] = line.slice(line.indexOf(":") + 1).trim();
      const rest = Buffer.from(data.slice(end + 4), "latin1");
      const text = rest.subarray(0, Number(headers["content-length"] ?? rest.length)).toString("utf8");
      let body: unknown = text;
      try {
        body = JSON.parse(text);
      } catch {
        // not JSON: the assertions show the text
      }
      resolve({ status: Number(statusLine!.split(" ")[1]), headers, text, body });
    });
  });
}

function http11(method: string, path: string, headers: Record<string, string> = {}, body: string | Buffer = ""): Buffer {
  const lines = [`${method} ${path} HTTP/1.1`, "Host: parley.test", "Connection: close", ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)];
  return Buffer.concat([Buffer.from(`${lines.join("\r\n")}\r\n\r\n`, "latin1"), Buffer.from(body)]);
}

/** A Zulip error reply: the status, JSON, result "error", a string msg and code. */
function assertZulipError(response: RawResponse, status: number, msg?: RegExp): void {
  const context = `${response.status} ${response.text}`;
  assert.equal(response.status, status, context);
  assert.match(response.headers["content-type"] ?? "", /^application\/json/, context);
  assert.equal(response.body.result, "error", context);
  assert.equal(typeof response.body.msg, "string", context);
  assert.equal(typeof response.body.code, "string", context);
  if (msg) assert.match(response.body.msg, msg, context);
}

describe("malformed multipart bodies: 400, not 500", () => {
  const fetchKey = (contentType: string, body: string | Buffer) =>
    rawRequest(http11("POST", "/api/v1/fetch_api_key", { "Content-Type": contentType, "Content-Length": String(Buffer.byteLength(body)) }, body));

  test("no boundary", async () => {
    assertZulipError(await fetchKey("multipart/form-data", "username=a&password=b"), 400, /multipart/i);
  });

  test("a garbage part", async () => {
    assertZulipError(await fetchKey("multipart/form-data; boundary=XyZ", Buffer.from("\x01\x02garbage without any boundary\xff\xfe", "latin1")), 400, /multipart/i);
  });

  test("an unterminated part", async () => {
    const body = '--XyZ\r\nContent-Disposition: form-data; name="username"\r\n\r\nsomeone@example.com';
    assertZulipError(await fetchKey("multipart/form-data; boundary=XyZ", body), 400, /multipart/i);
  });

  test("an unterminated file part on the upload endpoint, signed in", async () => {
    const body = '--XyZ\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\nContent-Type: text/plain\r\n\r\nhalf a file';
    const response = await rawRequest(
      http11(
        "POST",
        "/api/v1/user_uploads",
        { Authorization: basicAuth(t.users.member.email, t.users.member.apiKey), "Content-Type": "multipart/form-data; boundary=XyZ", "Content-Length": String(body.length) },
        body,
      ),
    );
    assertZulipError(response, 400, /multipart/i);
  });

  test("a boundary longer than the parser takes", async () => {
    const boundary = "b".repeat(300);
    const body = `--${boundary}\r\nContent-Disposition: form-data; name="username"\r\n\r\nx\r\n--${boundary}--\r\n`;
    assertZulipError(await fetchKey(`multipart/form-data; boundary=${boundary}`, body), 400, /multipart/i);
  });

  test("a well-formed multipart request still works", async () => {
    const member = t.users.member;
    const body = assertSuccess(await t.api(null, "POST", "/fetch_api_key", { username: member.email, password: member.password }, { encoding: "multipart" }));
    assert.equal(body.api_key, member.apiKey);
  });
});

describe("URLs and headers Fastify or Node refuse: Zulip error JSON", () => {
  test("invalid UTF-8 in the path: 400", async () => {
    for (const path of ["/api/v1/users/%FF%FE", "/avatar/%C3%28", "/api/v1/messages/%E0%80%80", "/api/v1/users/%zz"]) {
      assertZulipError(await rawRequest(http11("GET", path)), 400);
    }
  });

  test("invalid percent-encoding in the query string is taken literally, not a 500", async () => {
    const response = await rawRequest(http11("GET", "/api/v1/server_settings?x=%zz&y=%FF%FE&%=%"));
    assert.equal(response.status, 200, response.text);
    assert.equal(response.body.result, "success");
  });

  test("a path segment longer than 500 characters: 414", async () => {
    assertZulipError(await rawRequest(http11("GET", `/api/v1/users/${"1".repeat(600)}`)), 414);
    assertZulipError(await rawRequest(http11("GET", `/join/${"k".repeat(600)}`)), 414);
  });

  test("headers over Node's limit: 431", async () => {
    assertZulipError(await rawRequest(http11("GET", "/api/v1/server_settings", { "X-Padding": "p".repeat(20_000) })), 431);
  });

  test("an unknown HTTP method: 400", async () => {
    assertZulipError(await rawRequest(http11("FROB", "/api/v1/server_settings")), 400);
  });

  test("Content-Length that is not a number, or two that disagree: 400", async () => {
    assertZulipError(await rawRequest(http11("POST", "/api/v1/fetch_api_key", { "Content-Length": "abc" }, "x=1")), 400);
    assertZulipError(await rawRequest(Buffer.from("POST /api/v1/fetch_api_key HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 5\r\n\r\nx=1"), true), 400);
  });

  test("a body shorter than its Content-Length: 400", async () => {
    const response = await rawRequest(http11("POST", "/api/v1/fetch_api_key", { "Content-Type": "application/x-www-form-urlencoded", "Content-Length": "100" }, "username=x"), true);
    assertZulipError(response, 400);
  });

  test("bad chunked encoding: 400", async () => {
    const chunked = { "Content-Type": "application/x-www-form-urlencoded", "Transfer-Encoding": "chunked" };
    assertZulipError(await rawRequest(http11("POST", "/api/v1/fetch_api_key", chunked, "zz\r\nx=1\r\n0\r\n\r\n")), 400);
    assertZulipError(await rawRequest(http11("POST", "/api/v1/fetch_api_key", { ...chunked, "Content-Length": "3" }, "0\r\n\r\n")), 400);
  });

  test("a NUL byte in a header: 400", async () => {
    assertZulipError(await rawRequest(http11("GET", "/api/v1/server_settings", { "X-Odd": "a\u0000b" })), 400);
  });

  test("a JSON body that does not parse, or is empty: 400", async () => {
    for (const body of ["{{{", "", '{"username": "x"']) {
      const response = await rawRequest(http11("POST", "/api/v1/fetch_api_key", { "Content-Type": "application/json", "Content-Length": String(body.length) }, body));
      assertZulipError(response, 400);
    }
  });

  test("a content type that does not parse: 415", async () => {
    assertZulipError(await rawRequest(http11("POST", "/api/v1/fetch_api_key", { "Content-Type": ";;;", "Content-Length": "3" }, "x=1")), 415);
  });

  test("NUL in the Basic credentials: 401 on either database", async () => {
    const member = t.users.member;
    for (const header of [basicAuth(`${member.email}\u0000`, member.apiKey), basicAuth(member.email, `${member.apiKey}\u0000`)]) {
      assertError(await t.api(null, "GET", "/users/me", {}, { headers: { authorization: header } }), 401, "INVALID_API_KEY");
    }
  });
});

describe("/thumbnail redirects to this server's uploads, and other sites' images to the image proxy", () => {
  async function uploadFile(name: string, content: string): Promise<string> {
    const form = new FormData();
    form.append("file", new Blob([content], { type: "image/png" }), name);
    const response = await fetch(`${t.url}/api/v1/user_uploads`, {
      method: "POST",
      body: form,
      headers: { authorization: basicAuth(t.users.member.email, t.users.member.apiKey) },
    });
    const body = (await response.json()) as { result: string; url: string };
    assert.equal(body.result, "success", JSON.stringify(body));
    return body.url;
  }

  const thumbnail = (url: string) => fetch(`${t.url}/thumbnail?url=${encodeURIComponent(url)}&size=thumbnail`, { redirect: "manual" });

  test("an http(s) URL elsewhere: redirected to its signed image-proxy path (test/external-content.test.ts), never to the site itself", async () => {
    for (const url of ["https://evil.example/x", "http://evil.example/user_uploads/1/a/b.png", "http://parley.test.evil.example/user_uploads/1/a.png"]) {
      // Signed only for a signed-in reader.
      assert.equal((await thumbnail(url)).status, 401, url);
      const response = await fetch(`${t.url}/thumbnail?url=${encodeURIComponent(url)}&size=thumbnail`, {
        redirect: "manual",
        headers: { authorization: basicAuth(t.users.member.email, t.users.member.apiKey) },
      });
      assert.equal(response.status, 302, url);
      assert.match(response.headers.get("location") ?? "", /^\/external_content\/[0-9a-f]{40}\/[0-9a-f]+$/, url);
    }
  });

  test("any other URL: 403 Zulip error, no redirect", async () => {
    for (const url of [
      "//evil.example/user_uploads/1/a.png",
      "/\\evil.example/x",
      "https:evil.example",
      "javascript:alert(1)",
      "http://parley.test@evil.example/user_uploads/1/a.png",
      "user_uploads/1/../../api/v1/users/me",
      "user_uploads/x/a.png",
      "",
    ]) {
      const response = await thumbnail(url);
      assert.equal(response.status, 403, url);
      assert.equal(response.headers.get("location"), null, url);
      const body = (await response.json()) as Record<string, unknown>;
      assert.equal(body.result, "error", url);
      assert.equal(body.code, "BAD_REQUEST", url);
    }
    // Without the url parameter: Zulip's missing-argument error.
    const missing = await fetch(`${t.url}/thumbnail?size=full`, { redirect: "manual" });
    assert.equal(missing.status, 400);
    assert.deepEqual(await missing.json(), { result: "error", msg: "Missing 'url' argument", code: "REQUEST_VARIABLE_MISSING", var_name: "url" });
  });

  test("no header can be injected through the URL", async () => {
    const response = await thumbnail("user_uploads/1/a\r\nSet-Cookie: x=1");
    assert.equal(response.headers.get("set-cookie"), null);
    assert.equal(response.status, 302);
    assert.equal(response.headers.get("location"), "/user_uploads/1/a%0D%0ASet-Cookie%3A%20x%3D1");
  });

  test("an own upload: redirected to its file, which downloads with credentials", async () => {
    const url = await uploadFile("picture.png", "not really a png");
    for (const form of [url.slice(1), url, `http://parley.test${url}`]) {
      const response = await thumbnail(form);
      assert.equal(response.status, 302, form);
      assert.equal(response.headers.get("location"), url, form);
    }
    const file = await fetch(t.url + url, { headers: { authorization: basicAuth(t.users.member.email, t.users.member.apiKey) } });
    assert.equal(file.status, 200);
    assert.equal(await file.text(), "not really a png");
  });

  test("the previews the Markdown renderer writes for an uploaded image still resolve", async () => {
    const url = await uploadFile("preview.png", "preview bytes");
    const channel = uniqueName("thumbnails");
    assertSuccess(await t.api(t.users.member, "POST", "/users/me/subscriptions", { subscriptions: [{ name: channel }] }));
    const sent = assertSuccess(await t.api(t.users.member, "POST", "/messages", { type: "stream", to: channel, topic: "pics", content: `[preview.png](${url})` }));
    const message = assertSuccess(await t.api(t.users.member, "GET", `/messages/${sent.id}`)).message;
    const sources = [...(message.content as string).matchAll(/(?:src|data-src-fullsize)="([^"]+)"/g)].map((m) => m[1]!.replace(/&amp;/g, "&"));
    assert.ok(sources.length >= 1, message.content);
    for (const source of sources) {
      assert.match(source, /^\/thumbnail\?/, source);
      const response = await fetch(t.url + source, { redirect: "manual" });
      assert.equal(response.status, 302, source);
      assert.equal(response.headers.get("location"), url, source);
    }
  });
});

describe("POST /messages/render", () => {
  test("content over the message length limit: 400 before any rendering", async () => {
    assertError(
      await t.api(t.users.member, "POST", "/messages/render", { content: "[1,2,3]".repeat(2000) }),
      400,
      "BAD_REQUEST",
      "content is too long (limit: 10000 characters)",
    );
    assert.equal(assertSuccess(await t.api(t.users.member, "POST", "/messages/render", { content: "x".repeat(10_000) })).rendered, `<p>${"x".repeat(10_000)}</p>`);
  });
});
