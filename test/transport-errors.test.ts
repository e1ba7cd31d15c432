// Requests that are wrong before any parameter is read — malformed multipart
// bodies — answered with Zulip's error JSON like every other error. Raw
// sockets where fetch would fix up or refuse what is sent.
import assert from "node:assert/strict";
import net from "node:net";
import { after, before, describe, test } from "node:test";
import { assertSuccess, basicAuth, startTestApp, type TestApp } from "./helpers.ts";

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
