// API-level tests of a user's own email_address_visibility (PATCH /settings,
// Zulip feature level 163): the stored value, the errors, who sees the real
// address (delivery_email) and which public email (the real one or the fake
// user{id}@… one) through GET /users, GET /users/{id} and POST /register, and
// the events each role's queue receives when the setting changes.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { EmailVisibility } from "../src/domain/users.ts";
import { assertError, assertSuccess, startTestApp, type TestApp, type TestUser } from "./helpers.ts";

let t: TestApp;
before(async () => {
  t = await startTestApp();
});
after(() => t?.close());

const VIEWERS = ["owner", "admin", "moderator", "member", "guest", "bot"] as const;
type ViewerName = (typeof VIEWERS)[number];

/** Which viewers may see the real address under each setting (the bot is a member). */
const SEES: Record<number, readonly ViewerName[]> = {
  [EmailVisibility.EVERYONE]: VIEWERS,
  [EmailVisibility.MEMBERS]: ["owner", "admin", "moderator", "member", "bot"],
  [EmailVisibility.MODERATORS]: ["owner", "admin", "moderator"],
  [EmailVisibility.ADMINS]: ["owner", "admin"],
  [EmailVisibility.NOBODY]: [],
};

const fakeEmail = (id: number): string => `user${id}@${t.services.config.fakeEmailDomain}`;

async function storedVisibility(userId: number): Promise<number> {
  return (await t.services.storage.db.selectFrom("users").select("email_address_visibility").where("id", "=", userId).executeTakeFirstOrThrow()).email_address_visibility;
}

async function setVisibility(user: TestUser, value: unknown) {
  return t.api(user, "PATCH", "/settings", { email_address_visibility: value });
}

/** The subject as `viewer` sees it through GET /users, GET /users/{id} and /register, checked to agree. */
async function seenBy(viewer: TestUser, subject: TestUser): Promise<{ email: string; delivery_email: string | null }> {
  const list = assertSuccess(await t.api(viewer, "GET", "/users")).members as { user_id: number; email: string; delivery_email: string | null }[];
  const fromList = list.find((u) => u.user_id === subject.id)!;
  const single = assertSuccess(await t.api(viewer, "GET", `/users/${subject.id}`)).user;
  const state = await t.register(viewer, { fetch_event_types: ["realm_user"] });
  const registered = (state.realm_users as { user_id: number; email: string; delivery_email: string | null }[]).find((u) => u.user_id === subject.id)!;
  const seen = { email: fromList.email, delivery_email: fromList.delivery_email };
  assert.deepEqual({ email: single.email, delivery_email: single.delivery_email }, seen, "GET /users/{id} agrees with GET /users");
  assert.deepEqual({ email: registered.email, delivery_email: registered.delivery_email }, seen, "/register agrees with GET /users");
  return seen;
}

let counter = 0;
async function newSubject(): Promise<TestUser> {
  counter += 1;
  return t.createUser(`Vera Visible ${String.fromCharCode(64 + counter)}`);
}

describe("PATCH /settings email_address_visibility", () => {
  test("is stored, echoed in /register's user_settings and sends user_settings to the user's own clients", async () => {
    const subject = await newSubject();
    assert.equal(await storedVisibility(subject.id), EmailVisibility.ADMINS, "the organization's default for new users");
    const before = await t.register(subject, { event_types: ["user_settings", "update_display_settings", "update_global_notifications"] });
    assert.equal(before.user_settings.email_address_visibility, EmailVisibility.ADMINS);
    const reply = assertSuccess(await setVisibility(subject, EmailVisibility.NOBODY));
    assert.deepEqual(reply, { result: "success", msg: "" });
    assert.equal(await storedVisibility(subject.id), EmailVisibility.NOBODY);
    assert.equal((await t.register(subject, { fetch_event_types: ["user_settings"] })).user_settings.email_address_visibility, EmailVisibility.NOBODY);
    const events = (await t.queuedEvents(subject, before.queue_id)).map(({ id: _id, ...e }) => e);
    // A setting added after feature level 89: no legacy update_display_settings / update_global_notifications event.
    assert.deepEqual(events, [{ type: "user_settings", op: "update", property: "email_address_visibility", value: EmailVisibility.NOBODY }]);
  });

  test("setting the current value changes nothing and sends nothing", async () => {
    const subject = await newSubject();
    const queue = (await t.register(subject, { event_types: ["user_settings", "realm_user"] })).queue_id as string;
    assertSuccess(await setVisibility(subject, EmailVisibility.ADMINS));
    assert.deepEqual(await t.queuedEvents(subject, queue), []);
  });

  test("bad values fail with Zulip's errors and change nothing", async () => {
    const subject = await newSubject();
    const queue = (await t.register(subject, { event_types: ["user_settings", "realm_user"] })).queue_id as string;
    const outOfRange = "Invalid email_address_visibility: Value error, Not in the list of possible values";
    assertError(await setVisibility(subject, 0), 400, "BAD_REQUEST", outOfRange);
    assertError(await setVisibility(subject, 6), 400, "BAD_REQUEST", outOfRange);
    assertError(await setVisibility(subject, -1), 400, "BAD_REQUEST", outOfRange);
    // The value travels JSON-encoded: a bare word is not JSON, a JSON string or fraction is not an integer.
    assertError(await setVisibility(subject, "everyone"), 400, "BAD_REQUEST", 'Argument "email_address_visibility" is not valid JSON.');
    assertError(await setVisibility(subject, '"1"'), 400, "BAD_REQUEST", "email_address_visibility is not an integer");
    assertError(await setVisibility(subject, 1.5), 400, "BAD_REQUEST", "email_address_visibility is not an integer");
    assertError(await setVisibility(subject, true), 400, "BAD_REQUEST", "email_address_visibility is not an integer");
    // One bad value fails the whole request: the valid setting beside it is not written either.
    assertError(await t.api(subject, "PATCH", "/settings", { email_address_visibility: 9, full_name: "Vera Renamed" }), 400, "BAD_REQUEST", outOfRange);
    assert.equal(await storedVisibility(subject.id), EmailVisibility.ADMINS);
    assert.notEqual(assertSuccess(await t.api(subject, "GET", "/users/me")).full_name, "Vera Renamed");
    assert.deepEqual(await t.queuedEvents(subject, queue), []);
  });

  test("a bot may not change it", async () => {
    assertError(await setVisibility(t.users.bot, EmailVisibility.EVERYONE), 400, "BAD_REQUEST", "This endpoint does not accept bot requests.");
  });
});

describe("who sees the real address", () => {
  test("every role, under every setting, through GET /users, GET /users/{id} and /register", async () => {
    const subject = await newSubject();
    for (const visibility of [EmailVisibility.EVERYONE, EmailVisibility.MEMBERS, EmailVisibility.MODERATORS, EmailVisibility.ADMINS, EmailVisibility.NOBODY]) {
      assertSuccess(await setVisibility(subject, visibility));
      const publicEmail = visibility === EmailVisibility.EVERYONE ? subject.email : fakeEmail(subject.id);
      for (const name of VIEWERS) {
        const expected = { email: publicEmail, delivery_email: SEES[visibility]!.includes(name) ? subject.email : null };
        assert.deepEqual(await seenBy(t.users[name], subject), expected, `${name} under visibility ${visibility}`);
      }
      assert.deepEqual(await seenBy(subject, subject), { email: publicEmail, delivery_email: subject.email }, `the user themselves under ${visibility}`);
    }
  });

  test("the API email follows the setting: the real address works as a login and names the user only where it is public", async () => {
    const subject = await newSubject();
    assertSuccess(await setVisibility(subject, EmailVisibility.EVERYONE));
    assert.equal(assertSuccess(await t.api(t.users.guest, "GET", `/users/${encodeURIComponent(subject.email)}`)).user.user_id, subject.id);
    assertSuccess(await setVisibility(subject, EmailVisibility.ADMINS));
    // Basic auth with the real address works whatever the public email is.
    assertSuccess(await t.api(subject, "GET", "/users/me"));
    assert.equal(assertSuccess(await t.api(t.users.guest, "GET", `/users/${encodeURIComponent(fakeEmail(subject.id))}`)).user.user_id, subject.id);
    assertError(await t.api(t.users.guest, "GET", `/users/${encodeURIComponent(subject.email)}`), 400, "BAD_REQUEST", "No such user");
  });
});

describe("events when the setting changes", () => {
  test("each role's queue gets delivery_email where its access changes, and the new public email when 'everyone' is involved", async () => {
    const subject = await newSubject();
    const queues = new Map<TestUser, { id: string; last: number }>();
    for (const user of [...VIEWERS.map((n) => t.users[n]), subject]) {
      queues.set(user, { id: (await t.register(user, { event_types: ["realm_user", "user_settings"] })).queue_id as string, last: -1 });
    }
    /** The events a queue got since the last call, without their IDs. */
    const drain = async (user: TestUser) => {
      const queue = queues.get(user)!;
      const events = await t.queuedEvents(user, queue.id, queue.last);
      if (events.length > 0) queue.last = events.at(-1).id;
      return events.map(({ id: _id, ...e }) => e);
    };
    const avatar = assertSuccess(await t.api(subject, "GET", "/users/me"));
    const avatarEvent = {
      type: "realm_user",
      op: "update",
      person: { avatar_source: "G", avatar_url: avatar.avatar_url, avatar_url_medium: avatar.avatar_url.replace(".png", "-medium.png"), avatar_version: avatar.avatar_version, user_id: subject.id },
    };

    let previous: number = EmailVisibility.ADMINS;
    for (const visibility of [EmailVisibility.MEMBERS, EmailVisibility.EVERYONE, EmailVisibility.MODERATORS, EmailVisibility.NOBODY, EmailVisibility.ADMINS, EmailVisibility.EVERYONE, EmailVisibility.NOBODY]) {
      assertSuccess(await setVisibility(subject, visibility));
      const emailChanged = previous === EmailVisibility.EVERYONE || visibility === EmailVisibility.EVERYONE;
      const newEmail = visibility === EmailVisibility.EVERYONE ? subject.email : fakeEmail(subject.id);
      const publicChange = emailChanged ? [{ type: "realm_user", op: "update", person: { user_id: subject.id, new_email: newEmail } }, avatarEvent] : [];
      for (const name of VIEWERS) {
        const could = SEES[previous]!.includes(name);
        const can = SEES[visibility]!.includes(name);
        const access = could === can ? [] : [{ type: "realm_user", op: "update", person: { user_id: subject.id, delivery_email: can ? subject.email : null } }];
        assert.deepEqual(await drain(t.users[name]), [...access, ...publicChange], `${name}: ${previous} → ${visibility}`);
      }
      assert.deepEqual(
        await drain(subject),
        [{ type: "user_settings", op: "update", property: "email_address_visibility", value: visibility }, ...publicChange],
        `the user themselves: ${previous} → ${visibility}`,
      );
      previous = visibility;
    }
  });
});
