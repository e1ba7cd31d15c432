// API-level tests of rendered descriptions (issue 19): channel, channel
// folder and organization descriptions are rendered by the message renderer
// without previews, as Zulip's render_stream_description does, wherever they
// are shown (GET /streams, register, events, GET /channel_folders,
// GET /server_settings); and migration 0018 renders the rows stored before.
// Zulip's behaviour: docs/zulip-behaviour/misc-endpoints.md.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { sql } from "kysely";
import { renderDescription } from "../src/queries/markdown-context.ts";
import { migrateToLatest } from "../src/storage/migrate.ts";
import { assertError, assertSuccess, startTestApp, uniqueName, type TestApp } from "./helpers.ts";

/* eslint-disable @typescript-eslint/no-explicit-any */

let t: TestApp;
let other: { id: number; name: string };

before(async () => {
  t = await startTestApp();
  other = await newChannel("Elsewhere", "");
});
after(() => t?.close());

const u = () => t.users;

async function newChannel(prefix: string, description: string): Promise<{ id: number; name: string }> {
  const name = uniqueName(prefix);
  assertSuccess(await t.api(u().admin, "POST", "/users/me/subscriptions", { subscriptions: [{ name, description }], principals: [u().admin.id, u().member.id] }));
  const id = assertSuccess(await t.api(u().admin, "GET", "/get_stream_id", { stream: name })).stream_id as number;
  return { id, name };
}

async function channelObject(id: number): Promise<any> {
  return assertSuccess(await t.api(u().admin, "GET", `/streams/${id}`)).stream;
}

/** What the same Markdown renders to as a message (with previews, where they apply). */
async function asMessage(content: string): Promise<string> {
  return assertSuccess(await t.api(u().member, "POST", "/messages/render", { content })).rendered as string;
}

const RICH = () => `**Bold** plans with @**Max Member**, see #**${other.name}** :smile:`;

function expectedRich(): string {
  return (
    `<p><strong>Bold</strong> plans with <span class="user-mention" data-user-id="${u().member.id}">@Max Member</span>, ` +
    `see <a class="stream" data-stream-id="${other.id}" href="/#narrow/channel/${other.id}-${encodeURIComponent(other.name).replace(/%20/g, "-")}">#${other.name}</a> ` +
    `<span aria-label="smile" class="emoji emoji-1f642" role="img" title="smile">:smile:</span></p>`
  );
}

describe("channel descriptions", () => {
  test("created with Markdown: rendered as a message is, in GET /streams/{id} and register", async () => {
    const channel = await newChannel("Rich", RICH());
    const object = await channelObject(channel.id);
    assert.equal(object.description, RICH());
    assert.equal(object.rendered_description, await asMessage(RICH()));
    assert.equal(object.rendered_description, expectedRich());
    const state = await t.register(u().member, { fetch_event_types: ["subscription"] });
    assert.equal(state.subscriptions.find((s: any) => s.stream_id === channel.id).rendered_description, expectedRich());
  });

  test("no previews: an image or video link stays a link", async () => {
    const text = "Look https://example.com/cat.png and https://www.youtube.com/watch?v=dQw4w9WgXcQ";
    assert.match(await asMessage(text), /message_inline_image/);
    const channel = await newChannel("Images", text);
    const rendered = (await channelObject(channel.id)).rendered_description as string;
    assert.doesNotMatch(rendered, /message_inline_image|youtube-video|<img/);
    assert.match(rendered, /<a href="https:\/\/example\.com\/cat\.png"[^>]*>https:\/\/example\.com\/cat\.png<\/a>/);
  });

  test("links are made safe; raw HTML is escaped", async () => {
    const channel = await newChannel("Safe", "[click](javascript:alert(1)) <script>alert(1)</script> & co");
    const rendered = (await channelObject(channel.id)).rendered_description as string;
    assert.doesNotMatch(rendered, /href="javascript:/);
    assert.doesNotMatch(rendered, /<script>/);
    assert.match(rendered, /&lt;script&gt;alert\(1\)&lt;\/script&gt; &amp; co/);
  });

  test("PATCH /streams/{id}: the stream update event carries the rendering; clearing it gives \"\"", async () => {
    const channel = await newChannel("Patched", "");
    t.clearEvents();
    assertSuccess(await t.api(u().admin, "PATCH", `/streams/${channel.id}`, { description: "Now *emphasised*" }));
    const event = t.eventsFor(u().member.id, "stream", "update").find((e) => e.property === "description")!;
    assert.deepEqual(
      { value: event.value, rendered_description: event.rendered_description },
      { value: "Now *emphasised*", rendered_description: "<p>Now <em>emphasised</em></p>" },
    );
    assert.equal((await channelObject(channel.id)).rendered_description, "<p>Now <em>emphasised</em></p>");
    assertSuccess(await t.api(u().admin, "PATCH", `/streams/${channel.id}`, { description: "" }));
    assert.equal((await channelObject(channel.id)).rendered_description, "");
  });

  test("a mention of an unknown name stays text, as in messages", async () => {
    const channel = await newChannel("Unknown", "ask @**Nobody Here**");
    assert.equal((await channelObject(channel.id)).rendered_description, "<p>ask @<strong>Nobody Here</strong></p>");
  });
});

describe("channel folder descriptions", () => {
  test("create and update render Markdown; the update event carries the rendering", async () => {
    const created = assertSuccess(await t.api(u().admin, "POST", "/channel_folders/create", { name: uniqueName("Folder"), description: RICH() }));
    const folders = assertSuccess(await t.api(u().admin, "GET", "/channel_folders")).channel_folders as any[];
    assert.equal(folders.find((f) => f.id === created.channel_folder_id).rendered_description, expectedRich());
    t.clearEvents();
    assertSuccess(await t.api(u().admin, "PATCH", `/channel_folders/${created.channel_folder_id}`, { description: "`code` here" }));
    const event = t.eventsFor(u().member.id, "channel_folder", "update")[0]!;
    assert.deepEqual(event.data, { description: "`code` here", rendered_description: "<p><code>code</code> here</p>" });
  });
});

describe("organization description", () => {
  test("PATCH /realm: server_settings and register show the rendering; non-administrators cannot set it", async () => {
    assertSuccess(await t.api(u().owner, "PATCH", "/realm", { description: RICH() }));
    try {
      assert.equal(assertSuccess(await t.api(null, "GET", "/server_settings")).realm_description, expectedRich());
      const state = await t.register(u().guest, { fetch_event_types: ["realm"] });
      assert.equal(state.realm_description, expectedRich());
      assertError(await t.api(u().member, "PATCH", "/realm", { description: "mine" }), 400, "UNAUTHORIZED_PRINCIPAL", "Must be an organization administrator");
      assert.equal(assertSuccess(await t.api(null, "GET", "/server_settings")).realm_description, expectedRich());
    } finally {
      assertSuccess(await t.api(u().owner, "PATCH", "/realm", { description: "" }));
    }
    assert.equal(assertSuccess(await t.api(null, "GET", "/server_settings")).realm_description, "");
  });
});

describe("migration 0018", () => {
  test("renders again the descriptions stored with the old placeholder, and adds the organization's column", async () => {
    const app = await startTestApp();
    try {
      const db = app.services.storage.db;
      const name = uniqueName("Old");
      assertSuccess(await app.api(app.users.admin, "POST", "/users/me/subscriptions", { subscriptions: [{ name, description: "**old** & @**Max Member**" }] }));
      const folder = assertSuccess(await app.api(app.users.admin, "POST", "/channel_folders/create", { name: uniqueName("Old folder"), description: "*old*" }));
      assertSuccess(await app.api(app.users.owner, "PATCH", "/realm", { description: "Our **org**" }));
      // The database as it was before 0018: placeholder renderings, no realms.rendered_description, 0018 not recorded.
      await db.updateTable("channels").set({ rendered_description: "<p>**old** &amp; @**Max Member**</p>" }).where("name", "=", name).execute();
      await db.updateTable("channel_folders").set({ rendered_description: "<p>*old*</p>" }).where("id", "=", folder.channel_folder_id).execute();
      await sql`ALTER TABLE realms DROP COLUMN rendered_description`.execute(db);
      await sql`DROP TABLE realm_playgrounds`.execute(db);
      await sql`DELETE FROM kysely_migration WHERE name = '0018_descriptions_playgrounds'`.execute(db);

      const applied = await migrateToLatest(app.services.storage, {
        renderDescription: (trx, realmId, text) => renderDescription(trx, app.services.config, realmId, text),
      });
      assert.deepEqual(applied, ["0018_descriptions_playgrounds"]);

      const channel = await db.selectFrom("channels").select(["rendered_description"]).where("name", "=", name).executeTakeFirstOrThrow();
      assert.equal(channel.rendered_description, `<p><strong>old</strong> &amp; <span class="user-mention" data-user-id="${app.users.member.id}">@Max Member</span></p>`);
      const folderRow = await db.selectFrom("channel_folders").select("rendered_description").where("id", "=", folder.channel_folder_id).executeTakeFirstOrThrow();
      assert.equal(folderRow.rendered_description, "<p><em>old</em></p>");
      assert.equal(assertSuccess(await app.api(null, "GET", "/server_settings")).realm_description, "<p>Our <strong>org</strong></p>");
      // Channels without a description keep "".
      const empty = await db.selectFrom("channels").select("rendered_description").where("description", "=", "").execute();
      assert.ok(empty.every((r) => r.rendered_description === ""));
    } finally {
      await app.close();
    }
  });
});
