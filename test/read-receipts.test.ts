// API-level tests of GET /messages/{message_id}/read_receipts (Zulip's
// read_receipts view): the active users whose flags mark a message read,
// except its sender and those who turned send_read_receipts off; message
// access first, then the organization's enable_read_receipts.
// Muted users are left out both ways, as in Zulip.
// Zulip's behaviour: docs/zulip-behaviour/misc-endpoints.md.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { Role } from "../src/domain/roles.ts";
import { assertError, assertSuccess, createChannel, startTestApp, uniqueName, type ApiResponse, type Params, type TestApp, type TestUser } from "./helpers.ts";

let t: TestApp;

before(async () => {
  t = await startTestApp();
});
after(() => t?.close());

const u = () => t.users;
const sorted = (ids: number[]) => [...ids].sort((a, b) => a - b);

const receipts = (viewer: TestUser, id: number | string) => t.api(viewer, "GET", `/messages/${id}/read_receipts`);

async function receiptIds(viewer: TestUser, id: number): Promise<number[]> {
  const reply = assertSuccess(await receipts(viewer, id));
  assert.deepEqual(Object.keys(reply).sort(), ["msg", "result", "user_ids"]);
  return reply.user_ids as number[];
}

const newChannel = (creator: TestUser, subscribers: TestUser[], params: Params = {}) => createChannel(t, creator, subscribers, "receipts", params);

async function post(sender: TestUser, channel: { id: number }): Promise<number> {
  return assertSuccess(await t.api(sender, "POST", "/messages", { type: "channel", to: channel.id, topic: "receipts", content: "read me" })).id as number;
}

async function markRead(user: TestUser, id: number): Promise<void> {
  assertSuccess(await t.api(user, "POST", "/messages/flags", { messages: [id], op: "add", flag: "read" }));
}

async function setRealm(params: Params): Promise<void> {
  assertSuccess(await t.api(u().owner, "PATCH", "/realm", params));
}

function assertBad(response: ApiResponse, msg: string): void {
  assertError(response, 400, "BAD_REQUEST", msg);
}

describe("GET /messages/{message_id}/read_receipts", () => {
  test("those who read it, ascending, without the sender (who has it read) or those who have not", async () => {
    const { member, admin, moderator, guest, owner } = u();
    const channel = await newChannel(member, [admin, moderator, guest]);
    const id = await post(member, channel);
    assert.deepEqual(await receiptIds(member, id), []);
    await markRead(moderator, id);
    await markRead(admin, id);
    assert.deepEqual(await receiptIds(member, id), sorted([admin.id, moderator.id]));
    // Anyone who can read the message may ask, the guest included.
    for (const viewer of [owner, admin, moderator, guest]) assert.deepEqual(await receiptIds(viewer, id), sorted([admin.id, moderator.id]));
    // Marking unread takes one out again.
    assertSuccess(await t.api(admin, "POST", "/messages/flags", { messages: [id], op: "remove", flag: "read" }));
    assert.deepEqual(await receiptIds(member, id), [moderator.id]);
  });

  test("muted users are left out both ways: those the viewer muted, and those who muted the viewer", async () => {
    const viewer = await t.createUser(uniqueName("Receipt Viewer"));
    const mutedByViewer = await t.createUser(uniqueName("Muted Reader"));
    const muter = await t.createUser(uniqueName("Muting Reader"));
    const plain = await t.createUser(uniqueName("Plain Reader"));
    const channel = await newChannel(u().member, [viewer, mutedByViewer, muter, plain]);
    const id = await post(u().member, channel);
    for (const reader of [mutedByViewer, muter, plain]) await markRead(reader, id);
    assert.deepEqual(await receiptIds(viewer, id), sorted([mutedByViewer.id, muter.id, plain.id]));
    assertSuccess(await t.api(viewer, "POST", `/users/me/muted_users/${mutedByViewer.id}`));
    assertSuccess(await t.api(muter, "POST", `/users/me/muted_users/${viewer.id}`));
    assert.deepEqual(await receiptIds(viewer, id), [plain.id]);
    // Others still see everyone who read it.
    assert.deepEqual(await receiptIds(u().member, id), sorted([mutedByViewer.id, muter.id, plain.id]));
  });

  test("send_read_receipts off: left out; bots are included like anyone", async () => {
    const { member, bot } = u();
    const shy = await t.createUser(uniqueName("Shy"), Role.MEMBER);
    const open = await t.createUser(uniqueName("Open"), Role.MEMBER);
    const channel = await newChannel(member, [shy, open, bot]);
    const id = await post(member, channel);
    for (const reader of [shy, open, bot]) await markRead(reader, id);
    assert.deepEqual(await receiptIds(member, id), sorted([shy.id, open.id, bot.id]));
    assertSuccess(await t.api(shy, "PATCH", "/settings", { send_read_receipts: false }));
    assert.deepEqual(await receiptIds(member, id), sorted([open.id, bot.id]));
    assertSuccess(await t.api(shy, "PATCH", "/settings", { send_read_receipts: true }));
    assert.deepEqual(await receiptIds(member, id), sorted([shy.id, open.id, bot.id]));
  });

  test("deactivated readers are left out until reactivated", async () => {
    const { member, admin } = u();
    const reader = await t.createUser(uniqueName("Leaving"), Role.MEMBER);
    const channel = await newChannel(member, [reader]);
    const id = await post(member, channel);
    await markRead(reader, id);
    assert.deepEqual(await receiptIds(member, id), [reader.id]);
    assertSuccess(await t.api(admin, "DELETE", `/users/${reader.id}`));
    assert.deepEqual(await receiptIds(member, id), []);
    assertSuccess(await t.api(admin, "POST", `/users/${reader.id}/reactivate`));
    assert.deepEqual(await receiptIds(member, id), [reader.id]);
  });

  test("direct messages; a public channel's reader who is not subscribed (a historical flags row) counts", async () => {
    const { member, admin, moderator } = u();
    const dm = assertSuccess(await t.api(member, "POST", "/messages", { type: "direct", to: [admin.id, moderator.id], content: "hi" })).id as number;
    await markRead(admin, dm);
    assert.deepEqual(await receiptIds(moderator, dm), [admin.id]);
    const channel = await newChannel(member, []);
    const id = await post(member, channel);
    // Marking read makes no row for a non-subscriber (no row already counts as read); starring makes one, read and historical.
    await markRead(moderator, id);
    assert.deepEqual(await receiptIds(member, id), []);
    assertSuccess(await t.api(moderator, "POST", "/messages/flags", { messages: [id], op: "add", flag: "starred" }));
    assert.deepEqual(await receiptIds(member, id), [moderator.id]);
  });

  test("the organization's enable_read_receipts: off answers an error, after the message check", async () => {
    const { member, admin } = u();
    const channel = await newChannel(member, [admin]);
    const id = await post(member, channel);
    await markRead(admin, id);
    await setRealm({ enable_read_receipts: false });
    try {
      assertBad(await receipts(member, id), "Read receipts are disabled in this organization.");
      assertBad(await receipts(member, 99999999), "Invalid message(s)");
    } finally {
      await setRealm({ enable_read_receipts: true });
    }
    assert.deepEqual(await receiptIds(member, id), [admin.id]);
  });

  test("messages one cannot read: Invalid message(s); archived channels' messages still answer", async () => {
    const { member, admin, guest } = u();
    const secret = await newChannel(admin, [], { invite_only: true });
    const hidden = await post(admin, secret);
    assertBad(await receipts(member, hidden), "Invalid message(s)");
    const dm = assertSuccess(await t.api(admin, "POST", "/messages", { type: "direct", to: [member.id], content: "private" })).id as number;
    assertBad(await receipts(guest, dm), "Invalid message(s)");
    assertBad(await receipts(member, 99999999), "Invalid message(s)");
    assertError(await receipts(member, "abc"), 400, "BAD_REQUEST", "message_id is not an integer");
    const open = await newChannel(member, []);
    assertBad(await receipts(guest, await post(member, open)), "Invalid message(s)");
    const archived = await newChannel(member, [admin]);
    const old = await post(member, archived);
    await markRead(admin, old);
    assertSuccess(await t.api(admin, "DELETE", `/streams/${archived.id}`));
    assert.deepEqual(await receiptIds(member, old), [admin.id]);
    assertError(await t.api(null, "GET", `/messages/${old}/read_receipts`), 401, "UNAUTHORIZED");
  });
});
