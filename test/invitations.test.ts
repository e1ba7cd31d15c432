// Invitations: POST /invites, POST /invites/multiuse, GET /invites,
// DELETE /invites/{id}, DELETE /invites/multiuse/{id},
// POST /invites/{id}/resend, and signing up with a link (GET/POST
// /invites/join/{key} and the /join/{key}/ page) — reply shapes, Zulip's
// errors with their codes and extra fields, who may do what per role, the
// invites_changed events, the outbox files (no SMTP server is configured in
// these tests), the daily limit, and the account a sign-up creates: role,
// channels, default channels, groups, Welcome Bot and Notification Bot
// messages, refused links.
import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { after, before, beforeEach, describe, test } from "node:test";
import { Role } from "../src/domain/roles.ts";
import { assertError, assertSuccess, startTestApp, uniqueName, type TestApp, type TestUser } from "./helpers.ts";

const NOW = 1_760_000_000;
const DEFAULT_EXPIRY = NOW + 14400 * 60;
const LINK = /^http:\/\/parley\.test\/join\/([a-z2-7]{24})\/$/;

let t: TestApp;
let now = NOW;
before(async () => {
  t = await startTestApp();
  t.services.now = () => now;
});
after(() => t?.close());
beforeEach(() => {
  now = NOW;
  t.clearEvents();
});

const u = () => t.users;
const invite = (user: TestUser, params: Record<string, unknown>) => t.api(user, "POST", "/invites", { stream_ids: [], ...params });
const multiuse = (user: TestUser, params: Record<string, unknown> = {}) => t.api(user, "POST", "/invites/multiuse", params);
const listInvites = async (user: TestUser) => assertSuccess(await t.api(user, "GET", "/invites")).invites;
const fresh = (role: number = Role.MEMBER) => t.createUser(uniqueName("Inviter"), role);
const email = (prefix = "invitee") => `${uniqueName(prefix).replace(" ", "-")}@example.net`;

function outboxFiles(): string[] {
  const dir = path.join(t.services.config.dataDir, "outbox");
  return fs.existsSync(dir) ? fs.readdirSync(dir).sort() : [];
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
function outboxMessagesTo(address: string): any[] {
  const dir = path.join(t.services.config.dataDir, "outbox");
  return outboxFiles()
    .map((f) => JSON.parse(fs.readFileSync(path.join(dir, f), "utf8")))
    .filter((m) => m.to === address);
}

/** The link key of the one pending email invitation to `address`. */
async function keyFor(address: string): Promise<string> {
  const row = await t.services.storage.db
    .selectFrom("invitations")
    .select("confirmation_key")
    .where("email", "=", address)
    .where("status", "=", "pending")
    .executeTakeFirstOrThrow();
  return row.confirmation_key;
}

async function inviteIdFor(address: string): Promise<number> {
  const row = await t.services.storage.db.selectFrom("invitations").select("id").where("email", "=", address).orderBy("id", "desc").executeTakeFirstOrThrow();
  return row.id;
}

async function createChannel(name: string, params: Record<string, unknown> = {}, creator: TestUser = u().owner): Promise<number> {
  assertSuccess(await t.api(creator, "POST", "/users/me/subscriptions", { subscriptions: [{ name }], ...params }));
  const row = await t.services.storage.db.selectFrom("channels").select("id").where("name", "=", name).executeTakeFirstOrThrow();
  return row.id;
}

async function createGroup(name: string, params: Record<string, unknown> = {}): Promise<number> {
  return assertSuccess(await t.api(u().owner, "POST", "/user_groups/create", { name, description: "", members: [], ...params })).group_id;
}

async function setRealm(params: Record<string, unknown>): Promise<void> {
  assertSuccess(await t.api(u().owner, "PATCH", "/realm", params));
}

async function adminIds(): Promise<number[]> {
  return [u().owner.id, u().admin.id].sort((a, b) => a - b);
}

const invitesChangedRecipients = () => t.events.filter((n) => n.event.type === "invites_changed").map((n) => [...n.userIds].sort((a, b) => a - b));

const signUp = (key: string, params: Record<string, unknown>) => t.api(null, "POST", `/invites/join/${key}`, params);

async function signUpOk(key: string, params: Record<string, unknown>): Promise<TestUser & { userId: number }> {
  const body = assertSuccess(await signUp(key, params));
  assert.deepEqual(Object.keys(body).sort(), ["api_key", "email", "msg", "result", "user_id"]);
  const row = await t.services.storage.db.selectFrom("users").selectAll().where("id", "=", body.user_id).executeTakeFirstOrThrow();
  return { id: body.user_id, userId: body.user_id, email: row.delivery_email, apiKey: body.api_key, role: row.role, password: String(params.password) };
}

async function subscribedChannelIds(user: TestUser): Promise<number[]> {
  const subs = assertSuccess(await t.api(user, "GET", "/users/me/subscriptions")).subscriptions;
  return subs.map((s: { stream_id: number }) => s.stream_id).sort((a: number, b: number) => a - b);
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function directMessagesOf(user: TestUser): Promise<any[]> {
  const body = assertSuccess(await t.api(user, "GET", "/messages", { anchor: "newest", num_before: 50, num_after: 0, narrow: [{ operator: "is", operand: "dm" }], apply_markdown: false }));
  return body.messages;
}

describe("POST /invites", () => {
  test("invites every address (commas, newlines, Name <address>), lists them, emails them to the outbox, notifies admins and the referrer", async () => {
    const [a, b, c] = [email(), email(), email()];
    const before = outboxFiles().length;
    const body = assertSuccess(await invite(u().moderator, { invitee_emails: `${a}, Bea <${b}>\n${c}` }));
    assert.deepEqual(Object.keys(body).sort(), ["msg", "result"]);

    const listed = (await listInvites(u().moderator)).filter((i: { email?: string }) => [a, b, c].includes(i.email ?? ""));
    assert.equal(listed.length, 3);
    for (const [i, address] of [a, b, c].entries()) {
      assert.deepEqual(listed[i], {
        email: address,
        invited_by_user_id: u().moderator.id,
        invited: NOW,
        expiry_date: DEFAULT_EXPIRY,
        id: listed[i].id,
        invited_as: Role.MEMBER,
        is_multiuse: false,
        notify_referrer_on_join: true,
      });
    }
    assert.deepEqual(invitesChangedRecipients(), [[...(await adminIds()), u().moderator.id].sort((x, y) => x - y)]);
    assert.deepEqual(t.eventsFor(u().admin.id, "invites_changed"), [{ type: "invites_changed" }]);
    assert.deepEqual(t.eventsFor(u().member.id, "invites_changed"), []);

    assert.equal(outboxFiles().length, before + 3);
    const [mail] = outboxMessagesTo(b);
    const key = await keyFor(b);
    assert.equal(mail.subject, "Mona Moderator invited you to join Test Org");
    assert.equal(mail.kind, "invitation");
    assert.match(mail.from, /^noreply@/);
    assert.ok(mail.text.includes(`http://parley.test/join/${key}/`), mail.text);
    assert.ok(mail.text.includes("mona-moderator@example.com"), mail.text);
    assert.equal(typeof mail.date, "string");
  });

  test("invite_expires_in_minutes: null never expires, a number counts from now; the server default is 14400 minutes", async () => {
    const [never, soon, dflt] = [email(), email(), email()];
    assertSuccess(await invite(u().admin, { invitee_emails: never, invite_expires_in_minutes: null }));
    assertSuccess(await invite(u().admin, { invitee_emails: soon, invite_expires_in_minutes: 30 }));
    assertSuccess(await invite(u().admin, { invitee_emails: dflt }));
    const byEmail = new Map((await listInvites(u().admin)).map((i: { email: string }) => [i.email, i]));
    assert.equal((byEmail.get(never) as { expiry_date: unknown }).expiry_date, null);
    assert.equal((byEmail.get(soon) as { expiry_date: unknown }).expiry_date, NOW + 1800);
    assert.equal((byEmail.get(dflt) as { expiry_date: unknown }).expiry_date, DEFAULT_EXPIRY);
  });

  test("INVITATION_LINK_VALIDITY_MINUTES changes the default", async () => {
    const other = await startTestApp({ invitationLinkValidityMinutes: 60 });
    try {
      other.services.now = () => NOW;
      assertSuccess(await other.api(other.users.admin, "POST", "/invites", { invitee_emails: "x@example.net", stream_ids: [] }));
      const [listed] = assertSuccess(await other.api(other.users.admin, "GET", "/invites")).invites;
      assert.equal(listed.expiry_date, NOW + 3600);
    } finally {
      await other.close();
    }
  });

  test("guests and bots may not invite; can_invite_users_group decides for the others", async () => {
    assertError(await invite(u().guest, { invitee_emails: email() }), 400, "BAD_REQUEST", "Not allowed for guest users");
    assertError(await invite(u().bot, { invitee_emails: email() }), 400, "BAD_REQUEST", "This endpoint does not accept bot requests.");
    const sys = await t.systemGroupIds();
    await setRealm({ can_invite_users_group: { new: sys["role:administrators"] } });
    try {
      assertError(await invite(u().member, { invitee_emails: email() }), 400, "BAD_REQUEST", "Insufficient permission");
      assertError(await invite(u().moderator, { invitee_emails: email() }), 400, "BAD_REQUEST", "Insufficient permission");
      assertSuccess(await invite(u().admin, { invitee_emails: email() }));
    } finally {
      await setRealm({ can_invite_users_group: { new: sys["role:members"] } });
    }
    assertSuccess(await invite(u().member, { invitee_emails: email() }));
  });

  test("invite_as: 100–600 only; owners only by owners; administrators and moderators only by administrators", async () => {
    assertError(await invite(u().admin, { invitee_emails: email(), invite_as: 500 }), 400, "BAD_REQUEST", "Invalid invite_as");
    assertError(await invite(u().admin, { invitee_emails: email(), invite_as: "x" }), 400, "BAD_REQUEST", "invite_as is not an integer");
    assertError(await invite(u().admin, { invitee_emails: email(), invite_as: Role.OWNER }), 400, "UNAUTHORIZED_PRINCIPAL", "Must be an organization owner");
    for (const role of [Role.ADMINISTRATOR, Role.MODERATOR]) {
      assertError(await invite(u().moderator, { invitee_emails: email(), invite_as: role }), 400, "BAD_REQUEST", "Must be an organization administrator");
      assertError(await invite(u().member, { invitee_emails: email(), invite_as: role }), 400, "BAD_REQUEST", "Must be an organization administrator");
    }
    assertSuccess(await invite(u().member, { invitee_emails: email(), invite_as: Role.GUEST }));
    assertSuccess(await invite(u().admin, { invitee_emails: email(), invite_as: Role.ADMINISTRATOR }));
    const ownerInvitee = email();
    assertSuccess(await invite(u().owner, { invitee_emails: ownerInvitee, invite_as: Role.OWNER }));
    const listed = (await listInvites(u().owner)).find((i: { email: string }) => i.email === ownerInvitee);
    assert.equal(listed.invited_as, Role.OWNER);
  });

  test("bad input: no address, missing stream_ids, bad JSON, bad expiry, over-long welcome text", async () => {
    assertError(await invite(u().admin, { invitee_emails: "" }), 400, "BAD_REQUEST", "You must specify at least one email address.");
    assertError(await t.api(u().admin, "POST", "/invites", { invitee_emails: email() }), 400, "REQUEST_VARIABLE_MISSING", "Missing 'stream_ids' argument", {
      var_name: "stream_ids",
    });
    assertError(await t.api(u().admin, "POST", "/invites", { stream_ids: [] }), 400, "REQUEST_VARIABLE_MISSING", "Missing 'invitee_emails' argument");
    assertError(await invite(u().admin, { invitee_emails: email(), stream_ids: "[1," }), 400, "BAD_REQUEST", 'Argument "stream_ids" is not valid JSON.');
    assertError(await invite(u().admin, { invitee_emails: email(), group_ids: "nope" }), 400, "BAD_REQUEST", 'Argument "group_ids" is not valid JSON.');
    assertError(await invite(u().admin, { invitee_emails: email(), invite_expires_in_minutes: "soon" }), 400, "BAD_REQUEST", 'Argument "invite_expires_in_minutes" is not valid JSON.');
    assertError(await invite(u().admin, { invitee_emails: email(), invite_expires_in_minutes: -5 }), 400, "BAD_REQUEST", "Invalid invite_expires_in_minutes");
    assertError(await invite(u().admin, { invitee_emails: email(), notify_referrer_on_join: "maybe" }), 400, "BAD_REQUEST", 'Argument "notify_referrer_on_join" is not valid JSON.');
    assertError(
      await invite(u().admin, { invitee_emails: email(), welcome_message_custom_text: "x".repeat(8001) }),
      400,
      "BAD_REQUEST",
      "welcome_message_custom_text is too long (limit: 8000 characters)",
    );
    assertSuccess(await invite(u().admin, { invitee_emails: email(), welcome_message_custom_text: "x".repeat(8000) }));
  });

  test("channels: each must exist and be readable, and be a default channel or one the inviter may subscribe others to", async () => {
    const publicId = await createChannel(uniqueName("inv-public"));
    const privateId = await createChannel(uniqueName("inv-private"), { invite_only: true });
    const defaultId = await createChannel(uniqueName("inv-default"));
    assertSuccess(await t.api(u().admin, "POST", "/default_streams", { stream_id: defaultId }));

    assertError(await invite(u().member, { invitee_emails: email(), stream_ids: [999999] }), 400, "BAD_REQUEST", "Invalid channel ID 999999. No invites were sent.");
    assertError(await invite(u().member, { invitee_emails: email(), stream_ids: [privateId] }), 400, "BAD_REQUEST", `Invalid channel ID ${privateId}. No invites were sent.`);
    // Administrators see private channels' metadata but not their content.
    assertError(await invite(u().admin, { invitee_emails: email(), stream_ids: [privateId] }), 400, "BAD_REQUEST", `Invalid channel ID ${privateId}. No invites were sent.`);
    assertSuccess(await invite(u().owner, { invitee_emails: email(), stream_ids: [privateId, publicId] }));
    assertSuccess(await invite(u().member, { invitee_emails: email(), stream_ids: [publicId] }));

    const sys = await t.systemGroupIds();
    await setRealm({ can_add_subscribers_group: { new: sys["role:administrators"] } });
    try {
      assertError(
        await invite(u().member, { invitee_emails: email(), stream_ids: [publicId] }),
        400,
        "BAD_REQUEST",
        "You do not have permission to subscribe other users to channels.",
      );
      assertError(
        await multiuse(u().admin, { stream_ids: [privateId] }),
        400,
        "BAD_REQUEST",
        `Invalid channel ID ${privateId}. No invites were sent.`,
      );
      // Default channels are always allowed, as is asking for the default channels.
      assertSuccess(await invite(u().member, { invitee_emails: email(), stream_ids: [defaultId] }));
      assertSuccess(await invite(u().member, { invitee_emails: email(), stream_ids: [], include_realm_default_subscriptions: true }));
    } finally {
      await setRealm({ can_add_subscribers_group: { new: sys["role:members"] } });
    }
  });

  test("group_ids: groups the inviter may add members to", async () => {
    const sys = await t.systemGroupIds();
    const open = await createGroup(uniqueName("inv-open"), { can_add_members_group: sys["role:members"] });
    const closed = await createGroup(uniqueName("inv-closed"));
    assertError(await invite(u().member, { invitee_emails: email(), group_ids: [closed] }), 400, "BAD_REQUEST", "Insufficient permission");
    assertError(await invite(u().member, { invitee_emails: email(), group_ids: [999999] }), 400, "BAD_REQUEST", "Invalid user group");
    assertError(await invite(u().owner, { invitee_emails: email(), group_ids: [sys["role:members"]] }), 400, "BAD_REQUEST", "Insufficient permission");
    assertSuccess(await invite(u().member, { invitee_emails: email(), group_ids: [open] }));
    assertSuccess(await invite(u().owner, { invitee_emails: email(), group_ids: [closed] }));
  });

  test("welcome_message_custom_text is for administrators only", async () => {
    assertError(await invite(u().moderator, { invitee_emails: email(), welcome_message_custom_text: "Hi" }), 400, "BAD_REQUEST", "Must be an organization administrator");
    assertError(await multiuse(u().owner, { welcome_message_custom_text: "x".repeat(8001) }), 400, "BAD_REQUEST", "welcome_message_custom_text is too long (limit: 8000 characters)");
    assertSuccess(await invite(u().admin, { invitee_emails: email(), welcome_message_custom_text: "" }));
  });

  test("INVITATION_FAILED: existing accounts are skipped and everyone else is invited", async () => {
    const newcomer = email();
    const before = outboxFiles().length;
    const reply = await invite(u().admin, { invitee_emails: `${newcomer}, ${u().member.email}` });
    assertError(
      reply,
      400,
      "INVITATION_FAILED",
      "Some of those addresses are already using Zulip, so we didn't send them an invitation. We did send invitations to everyone else!",
      { errors: [[u().member.email, "Already has an account.", false]], sent_invitations: true, daily_limit_reached: false, license_limit_reached: false },
    );
    assert.ok((await listInvites(u().admin)).some((i: { email: string }) => i.email === newcomer));
    assert.equal(outboxFiles().length, before + 1);
    assert.equal(outboxMessagesTo(u().member.email).length, 0);
    assert.equal(invitesChangedRecipients().length, 1);
  });

  test("INVITATION_FAILED: nobody invitable, deactivated accounts, invalid addresses (then nobody is invited)", async () => {
    const gone = await fresh();
    assertSuccess(await t.api(u().admin, "DELETE", `/users/${gone.id}`));
    assertError(await invite(u().admin, { invitee_emails: `${u().member.email}, ${gone.email}` }), 400, "INVITATION_FAILED", "We weren't able to invite anyone.", {
      errors: [
        [u().member.email, "Already has an account.", false],
        [gone.email, "Account has been deactivated.", true],
      ],
      sent_invitations: false,
      daily_limit_reached: false,
      license_limit_reached: false,
    });
    const valid = email();
    assertError(
      await invite(u().admin, { invitee_emails: `${valid}, not-an-address, ${u().member.email}` }),
      400,
      "INVITATION_FAILED",
      "Some emails did not validate, so we didn't send any invitations.",
      {
        errors: [
          ["not-an-address", "Invalid address.", false],
          [u().member.email, "Already has an account.", false],
        ],
        sent_invitations: false,
        daily_limit_reached: false,
        license_limit_reached: false,
      },
    );
    assert.ok(!(await listInvites(u().admin)).some((i: { email: string }) => i.email === valid));
    assert.deepEqual(invitesChangedRecipients(), []);
  });

  test("the daily limit counts invitation emails, resends included, over 24 hours", async () => {
    const small = await startTestApp({ invitesDailyMax: 3 });
    let clock = NOW;
    small.services.now = () => clock;
    try {
      const post = (emails: string) => small.api(small.users.admin, "POST", "/invites", { invitee_emails: emails, stream_ids: [] });
      assertSuccess(await post("a@example.net, b@example.net"));
      const limited = {
        errors: [],
        sent_invitations: false,
        daily_limit_reached: true,
        license_limit_reached: false,
      };
      const msg = "To protect users, Zulip limits the number of invitations you can send in one day. Because you have reached the limit, no invitations were sent.";
      assertError(await post("c@example.net, d@example.net"), 400, "INVITATION_FAILED", msg, limited);
      const [first] = assertSuccess(await small.api(small.users.admin, "GET", "/invites")).invites;
      assertSuccess(await small.api(small.users.admin, "POST", `/invites/${first.id}/resend`));
      assertError(await small.api(small.users.admin, "POST", `/invites/${first.id}/resend`), 400, "INVITATION_FAILED", msg, limited);
      assertError(await post("c@example.net"), 400, "INVITATION_FAILED", msg, limited);
      assert.equal(assertSuccess(await small.api(small.users.admin, "GET", "/invites")).invites.length, 2);
      clock = NOW + 24 * 3600 + 1;
      assertSuccess(await post("c@example.net, d@example.net, e@example.net"));
    } finally {
      await small.close();
    }
  });
});

describe("POST /invites/multiuse", () => {
  test("administrators by default (create_multiuse_invite_group); returns the link; listed with its shape", async () => {
    const body = assertSuccess(await multiuse(u().admin, { invite_as: Role.GUEST, invite_expires_in_minutes: 60 }));
    assert.deepEqual(Object.keys(body).sort(), ["invite_link", "msg", "result"]);
    assert.match(body.invite_link, LINK);
    const listed = (await listInvites(u().admin)).find((i: { link_url?: string }) => i.link_url === body.invite_link);
    assert.deepEqual(listed, {
      invited_by_user_id: u().admin.id,
      invited: NOW,
      expiry_date: NOW + 3600,
      id: listed.id,
      link_url: body.invite_link,
      invited_as: Role.GUEST,
      is_multiuse: true,
    });
    assert.deepEqual(invitesChangedRecipients(), [await adminIds()]);

    assertError(await multiuse(u().member), 400, "BAD_REQUEST", "Insufficient permission");
    assertError(await multiuse(u().moderator), 400, "BAD_REQUEST", "Insufficient permission");
    assertError(await multiuse(u().guest), 400, "BAD_REQUEST", "Not allowed for guest users");
    assertError(await multiuse(u().bot), 400, "BAD_REQUEST", "This endpoint does not accept bot requests.");
    assertError(await multiuse(u().admin, { invite_as: Role.OWNER }), 400, "UNAUTHORIZED_PRINCIPAL", "Must be an organization owner");
    assertError(await multiuse(u().admin, { invite_as: 1 }), 400, "BAD_REQUEST", "Invalid invite_as");
    assertSuccess(await multiuse(u().owner, { invite_as: Role.OWNER, invite_expires_in_minutes: null }));
  });

  test("non-administrators in create_multiuse_invite_group may create links, to roles below administrator", async () => {
    const sys = await t.systemGroupIds();
    await setRealm({ create_multiuse_invite_group: { new: sys["role:members"] } });
    try {
      assert.match(assertSuccess(await multiuse(u().member)).invite_link, LINK);
      assertError(await multiuse(u().moderator, { invite_as: Role.MODERATOR }), 400, "BAD_REQUEST", "Must be an organization administrator");
      assertError(await multiuse(u().member, { welcome_message_custom_text: "Hi" }), 400, "BAD_REQUEST", "Must be an organization administrator");
      assertError(await multiuse(u().guest), 400, "BAD_REQUEST", "Not allowed for guest users");
    } finally {
      await setRealm({ create_multiuse_invite_group: { new: sys["role:administrators"] } });
    }
  });
});

describe("GET /invites, DELETE /invites/{id}, DELETE /invites/multiuse/{id}, POST /invites/{id}/resend", () => {
  test("administrators see every usable invitation; others only their own; expired, revoked and used ones are not listed", async () => {
    const member = await fresh();
    const mine = email();
    const theirs = email();
    assertSuccess(await invite(member, { invitee_emails: mine }));
    assertSuccess(await invite(u().admin, { invitee_emails: theirs, invite_expires_in_minutes: 10 }));
    const memberView = (await listInvites(member)).map((i: { email: string }) => i.email);
    assert.deepEqual(memberView, [mine]);
    const adminView = (await listInvites(u().owner)).map((i: { email: string }) => i.email);
    assert.ok(adminView.includes(mine) && adminView.includes(theirs));
    assertError(await t.api(u().guest, "GET", "/invites"), 400, "BAD_REQUEST", "Not allowed for guest users");
    now = NOW + 11 * 60;
    assert.ok(!(await listInvites(u().owner)).some((i: { email: string }) => i.email === theirs));
  });

  test("revoking: one's own, or as an administrator (owner for owner invitations); events to admins and the referrer", async () => {
    const member = await fresh();
    const [own, adminsInvite, ownersInvite] = [email(), email(), email()];
    assertSuccess(await invite(member, { invitee_emails: own }));
    assertSuccess(await invite(u().admin, { invitee_emails: adminsInvite }));
    assertSuccess(await invite(u().owner, { invitee_emails: ownersInvite, invite_as: Role.OWNER }));
    const [ownId, adminsId, ownersId] = [await inviteIdFor(own), await inviteIdFor(adminsInvite), await inviteIdFor(ownersInvite)];

    assertError(await t.api(member, "DELETE", `/invites/${adminsId}`), 400, "BAD_REQUEST", "Must be an organization administrator");
    assertError(await t.api(u().moderator, "DELETE", `/invites/${ownId}`), 400, "BAD_REQUEST", "Must be an organization administrator");
    assertError(await t.api(u().admin, "DELETE", `/invites/${ownersId}`), 400, "UNAUTHORIZED_PRINCIPAL", "Must be an organization owner");
    assertError(await t.api(u().admin, "DELETE", "/invites/999999"), 400, "BAD_REQUEST", "No such invitation");
    assertError(await t.api(u().admin, "DELETE", `/invites/multiuse/${ownId}`), 400, "BAD_REQUEST", "No such invitation");
    assertError(await t.api(u().admin, "DELETE", "/invites/abc"), 400, "BAD_REQUEST", "invite_id is not an integer");

    t.clearEvents();
    assertSuccess(await t.api(member, "DELETE", `/invites/${ownId}`));
    assert.deepEqual(invitesChangedRecipients(), [[...(await adminIds()), member.id].sort((a, b) => a - b)]);
    assertSuccess(await t.api(u().admin, "DELETE", `/invites/${adminsId}`));
    assertSuccess(await t.api(u().owner, "DELETE", `/invites/${ownersId}`));
    assertError(await t.api(member, "DELETE", `/invites/${ownId}`), 400, "BAD_REQUEST", "No such invitation");
    const listed = (await listInvites(u().owner)).map((i: { email: string }) => i.email);
    for (const address of [own, adminsInvite, ownersInvite]) assert.ok(!listed.includes(address));
    // A revoked link no longer signs anyone up.
    const key = (await t.services.storage.db.selectFrom("invitations").select("confirmation_key").where("id", "=", ownId).executeTakeFirstOrThrow()).confirmation_key;
    assertError(await signUp(key, { full_name: "Too Late", password: "secret-pass" }), 400, "BAD_REQUEST", "The confirmation link has expired or been deactivated.");
  });

  test("revoking reusable links; a second revocation says so", async () => {
    const link = assertSuccess(await multiuse(u().admin)).invite_link;
    const id = (await listInvites(u().admin)).find((i: { link_url?: string }) => i.link_url === link).id;
    assertError(await t.api(u().moderator, "DELETE", `/invites/multiuse/${id}`), 400, "BAD_REQUEST", "Must be an organization administrator");
    assertError(await t.api(u().admin, "DELETE", `/invites/${id}`), 400, "BAD_REQUEST", "No such invitation");
    t.clearEvents();
    assertSuccess(await t.api(u().owner, "DELETE", `/invites/multiuse/${id}`));
    assert.deepEqual(invitesChangedRecipients(), [await adminIds()]);
    assertError(await t.api(u().admin, "DELETE", `/invites/multiuse/${id}`), 400, "BAD_REQUEST", "Invitation has already been revoked");
    assert.ok(!(await listInvites(u().admin)).some((i: { id: number; is_multiuse: boolean }) => i.is_multiuse && i.id === id));
    const key = LINK.exec(link)![1]!;
    assertError(await signUp(key, { full_name: "Too Late", password: "secret-pass", email: email() }), 400, "BAD_REQUEST", "The confirmation link has expired or been deactivated.");
  });

  test("resending mails the same link again; same permission rules", async () => {
    const member = await fresh();
    const address = email();
    assertSuccess(await invite(member, { invitee_emails: address }));
    const id = await inviteIdFor(address);
    const body = assertSuccess(await t.api(member, "POST", `/invites/${id}/resend`));
    assert.deepEqual(Object.keys(body).sort(), ["msg", "result"]);
    const mails = outboxMessagesTo(address);
    assert.equal(mails.length, 2);
    assert.equal(mails[0].text, mails[1].text);
    assertSuccess(await t.api(u().admin, "POST", `/invites/${id}/resend`));
    assertError(await t.api(u().moderator, "POST", `/invites/${id}/resend`), 400, "BAD_REQUEST", "Must be an organization administrator");
    assertError(await t.api(u().admin, "POST", "/invites/999999/resend"), 400, "BAD_REQUEST", "No such invitation");
    assertError(await t.api(u().guest, "POST", `/invites/${id}/resend`), 400, "BAD_REQUEST", "Not allowed for guest users");
    assert.equal(outboxMessagesTo(address).length, 3);
  });
});

describe("signing up with an invitation", () => {
  test("an email invitation: role, channels, groups, Welcome Bot's custom text, the referrer told, the invitation used", async () => {
    const channelId = await createChannel(uniqueName("signup-chan"));
    const defaultId = await createChannel(uniqueName("signup-default"));
    assertSuccess(await t.api(u().admin, "POST", "/default_streams", { stream_id: defaultId }));
    const groupId = await createGroup(uniqueName("signup-group"), { can_add_members_group: (await t.systemGroupIds())["role:administrators"] });
    const address = email("joiner");
    assertSuccess(
      await invite(u().admin, {
        invitee_emails: address,
        invite_as: Role.MODERATOR,
        stream_ids: [channelId],
        group_ids: [groupId],
        welcome_message_custom_text: "Welcome to **the team**!",
      }),
    );
    const key = await keyFor(address);

    const described = assertSuccess(await t.api(null, "GET", `/invites/join/${key}`)).invitation;
    assert.deepEqual(described, {
      realm_name: "Test Org",
      realm_url: "http://parley.test",
      is_multiuse: false,
      email: address,
      invited_as: Role.MODERATOR,
      invited_by: "Adam Admin",
      expiry_date: DEFAULT_EXPIRY,
    });

    t.clearEvents();
    // An email given for an email invitation is ignored: the invited address is the account's.
    const joined = await signUpOk(key, { full_name: "Jo Joiner", password: "jo-secret", email: "other@example.net" });
    assert.equal(joined.email, address);
    assert.equal(joined.role, Role.MODERATOR);
    const me = assertSuccess(await t.api(joined, "GET", "/users/me"));
    assert.equal(me.full_name, "Jo Joiner");
    assert.equal(me.role, Role.MODERATOR);
    // Only the invitation's channels: the default channels were not asked for.
    assert.deepEqual(await subscribedChannelIds(joined), [channelId]);
    const members = assertSuccess(await t.api(u().owner, "GET", `/user_groups/${groupId}/members`)).members;
    assert.deepEqual(members, [joined.id]);

    // The events of account creation come from the existing actions.
    assert.equal(t.eventsFor(u().member.id, "realm_user", "add").length, 1);
    assert.equal(t.eventsFor(joined.id, "subscription", "add").length, 1);
    assert.deepEqual(t.eventsFor(u().member.id, "user_group", "add_members").filter((e) => e.group_id === groupId), [
      { type: "user_group", op: "add_members", group_id: groupId, user_ids: [joined.id] },
    ]);
    assert.deepEqual(invitesChangedRecipients(), [await adminIds()]);

    const dms = await directMessagesOf(joined);
    const fromWelcomeBot = dms.filter((m) => m.sender_email === "welcome-bot@zulip.com");
    assert.equal(fromWelcomeBot.length, 2);
    assert.match(fromWelcomeBot[0].content, /^Hello, and welcome to Zulip!👋 This is a direct message from me, Welcome Bot\./);
    assert.equal(fromWelcomeBot[1].content, "Welcome to **the team**!");

    const referrerDms = await directMessagesOf(u().admin);
    const notice = referrerDms.find((m) => m.sender_email === "notification-bot@zulip.com" && m.content.includes("accepted your invitation"));
    assert.equal(notice.content, `@_**Jo Joiner|${joined.id}** accepted your invitation to join Zulip!`);

    // The invitation is spent.
    assert.ok(!(await listInvites(u().admin)).some((i: { email: string }) => i.email === address));
    assertError(await signUp(key, { full_name: "Jo Again", password: "jo-secret" }), 400, "BAD_REQUEST", "The confirmation link has expired or been deactivated.");
    assertError(await t.api(null, "GET", `/invites/join/${key}`), 400, "BAD_REQUEST", "The confirmation link has expired or been deactivated.");
  });

  test("include_realm_default_subscriptions adds the default channels; notify_referrer_on_join false tells nobody; other invitations of the address are revoked", async () => {
    const channelId = await createChannel(uniqueName("signup2-chan"));
    const defaultId = await createChannel(uniqueName("signup2-default"));
    assertSuccess(await t.api(u().admin, "POST", "/default_streams", { stream_id: defaultId }));
    const defaults = (await t.services.storage.db.selectFrom("default_channels").select("channel_id").execute()).map((r) => r.channel_id);
    const member = await fresh();
    const address = email("quiet");
    assertSuccess(await invite(member, { invitee_emails: address, stream_ids: [channelId], include_realm_default_subscriptions: true, notify_referrer_on_join: false }));
    const key = await keyFor(address);
    assertSuccess(await invite(u().admin, { invitee_emails: address }));
    assert.equal((await listInvites(u().admin)).filter((i: { email: string }) => i.email === address).length, 2);

    const joined = await signUpOk(key, { full_name: "Quinn Quiet", password: "quiet-pass" });
    assert.equal(joined.role, Role.MEMBER);
    assert.deepEqual(await subscribedChannelIds(joined), [...new Set([channelId, ...defaults])].sort((a, b) => a - b));
    assert.equal((await directMessagesOf(member)).filter((m) => m.sender_email === "notification-bot@zulip.com").length, 0);
    assert.equal((await listInvites(u().admin)).filter((i: { email: string }) => i.email === address).length, 0);
    // No custom text on the invitation and none for the organization: only the standard welcome.
    assert.equal((await directMessagesOf(joined)).filter((m) => m.sender_email === "welcome-bot@zulip.com").length, 1);
  });

  test("a reusable link signs up many people until revoked; email required; the organization's welcome text applies", async () => {
    const channelId = await createChannel(uniqueName("link-chan"));
    await setRealm({ welcome_message_custom_text: "Read the #**rules** first." });
    try {
      const link = assertSuccess(await multiuse(u().admin, { invite_as: Role.GUEST, stream_ids: [channelId] })).invite_link;
      const key = LINK.exec(link)![1]!;
      const described = assertSuccess(await t.api(null, "GET", `/invites/join/${key}`)).invitation;
      assert.equal(described.is_multiuse, true);
      assert.equal(described.email, null);

      assertError(await signUp(key, { full_name: "No Mail", password: "secret-pass" }), 400, "REQUEST_VARIABLE_MISSING", "Missing 'email' argument", { var_name: "email" });
      assertError(await signUp(key, { full_name: "Bad Mail", password: "secret-pass", email: "nope" }), 400, "BAD_REQUEST", "Please enter a valid email address.");
      assertError(await signUp(key, { full_name: "Taken", password: "secret-pass", email: u().member.email }), 400, "BAD_REQUEST", `Email '${u().member.email}' already in use`);
      assertError(await signUp(key, { full_name: "X", password: "secret-pass", email: email() }), 400, "BAD_REQUEST", "Name too short!");
      assertError(await signUp(key, { full_name: "Short Pass", password: "123", email: email() }), 400, "BAD_REQUEST", "The password is too weak.");
      assertError(await signUp(key, { password: "secret-pass", email: email() }), 400, "REQUEST_VARIABLE_MISSING", "Missing 'full_name' argument");

      const first = await signUpOk(key, { full_name: "First Guest", password: "secret-pass", email: email("g1") });
      const second = await signUpOk(key, { full_name: "Second Guest", password: "secret-pass", email: email("g2") });
      for (const joined of [first, second]) {
        assert.equal(joined.role, Role.GUEST);
        assert.deepEqual(await subscribedChannelIds(joined), [channelId]);
        const welcome = (await directMessagesOf(joined)).filter((m) => m.sender_email === "welcome-bot@zulip.com");
        assert.deepEqual(welcome.map((m) => m.content).slice(1), ["Read the #**rules** first."]);
      }
      // Nobody is told about sign-ups through a link.
      assert.equal((await directMessagesOf(u().admin)).filter((m) => m.content.includes("Guest|")).length, 0);
      // The link is still listed and usable.
      assert.ok((await listInvites(u().admin)).some((i: { link_url?: string }) => i.link_url === link));
    } finally {
      await setRealm({ welcome_message_custom_text: "" });
    }
  });

  test("an empty custom text sends no custom message even when the organization has one", async () => {
    await setRealm({ welcome_message_custom_text: "Organization text" });
    try {
      const address = email("plain");
      assertSuccess(await invite(u().admin, { invitee_emails: address, welcome_message_custom_text: "" }));
      const joined = await signUpOk(await keyFor(address), { full_name: "Pat Plain", password: "plain-pass" });
      const welcome = (await directMessagesOf(joined)).filter((m) => m.sender_email === "welcome-bot@zulip.com");
      assert.equal(welcome.length, 1);
      assert.ok(!welcome[0].content.includes("Organization text"));
    } finally {
      await setRealm({ welcome_message_custom_text: "" });
    }
  });

  test("expired and unknown links are refused", async () => {
    const address = email("late");
    assertSuccess(await invite(u().admin, { invitee_emails: address, invite_expires_in_minutes: 5 }));
    const key = await keyFor(address);
    const link = assertSuccess(await multiuse(u().admin, { invite_expires_in_minutes: 5 })).invite_link;
    now = NOW + 6 * 60;
    const dead = "The confirmation link has expired or been deactivated.";
    assertError(await signUp(key, { full_name: "Lee Late", password: "late-pass" }), 400, "BAD_REQUEST", dead);
    assertError(await signUp(LINK.exec(link)![1]!, { full_name: "Lee Late", password: "late-pass", email: email() }), 400, "BAD_REQUEST", dead);
    const unknown = "Whoops. We couldn't find your confirmation link in the system.";
    assertError(await signUp("aaaaaaaaaaaaaaaaaaaaaaaa", { full_name: "Nobody", password: "late-pass" }), 404, "BAD_REQUEST", unknown);
    assertError(await t.api(null, "GET", "/invites/join/NOT-A-KEY"), 404, "BAD_REQUEST", unknown);
    assert.equal(await t.services.storage.db.selectFrom("users").select("id").where("delivery_email", "=", address).executeTakeFirst(), undefined);
  });

  test("the link's page: GET shows a form, POST signs up", async () => {
    const address = email("web");
    assertSuccess(await invite(u().admin, { invitee_emails: address }));
    const key = await keyFor(address);
    const [mail] = outboxMessagesTo(address);
    const url = `http://parley.test/join/${key}/`;
    assert.ok(mail.text.includes(url));
    const pageUrl = `${t.url}/join/${key}/`;
    const form = await fetch(pageUrl);
    assert.equal(form.status, 200);
    assert.match(form.headers.get("content-type") ?? "", /^text\/html/);
    const html = await form.text();
    assert.ok(html.includes("Adam Admin invited you to join Test Org"), html);
    assert.ok(html.includes('name="password"') && !html.includes('name="email"'), html);

    const bad = await fetch(pageUrl, { method: "POST", headers: { "content-type": "application/x-www-form-urlencoded" }, body: new URLSearchParams({ full_name: "W", password: "web-pass" }) });
    assert.equal(bad.status, 400);
    assert.ok((await bad.text()).includes("Name too short!"));

    const done = await fetch(pageUrl, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ full_name: "Wendy Web", password: "web-pass" }),
      redirect: "manual",
    });
    // Signed in, and off to the web app.
    assert.equal(done.status, 303);
    assert.equal(done.headers.get("location"), "/");
    const cookie = /^parley_session=[A-Za-z0-9_-]{43}/.exec(done.headers.get("set-cookie") ?? "")?.[0];
    assert.ok(cookie, done.headers.get("set-cookie") ?? "no cookie");
    const row = await t.services.storage.db.selectFrom("users").select(["id", "full_name"]).where("delivery_email", "=", address).executeTakeFirstOrThrow();
    assert.equal(row.full_name, "Wendy Web");
    const session = assertSuccess(await t.json({ userId: row.id, cookie, csrfToken: "" }, "GET", "/session"));
    assert.equal(session.user_id, row.id);
    // The new account logs in with its password.
    const login = assertSuccess(await t.api(null, "POST", "/fetch_api_key", { username: address, password: "web-pass" }));
    assert.equal(typeof login.api_key, "string");

    const spent = await fetch(pageUrl);
    assert.equal(spent.status, 400);
    assert.ok((await spent.text()).includes("expired or been deactivated"));
    assert.equal((await fetch(`${t.url}/join/zzzzzzzzzzzzzzzzzzzzzzzz/`)).status, 404);
  });
});

describe("invitation emails over SMTP", () => {
  /** A minimal SMTP server: records each message's envelope and data; refuses recipients at refused.example. */
  async function fakeSmtp(): Promise<{ port: number; messages: { to: string[]; data: string }[]; close(): Promise<void> }> {
    const net = await import("node:net");
    const messages: { to: string[]; data: string }[] = [];
    const server = net.createServer((socket) => {
      let buffer = "";
      let inData = false;
      let to: string[] = [];
      let data = "";
      socket.write("220 fake ESMTP\r\n");
      socket.on("data", (chunk) => {
        buffer += chunk.toString("utf8");
        let index;
        while ((index = buffer.indexOf("\r\n")) >= 0) {
          const line = buffer.slice(0, index);
          buffer = buffer.slice(index + 2);
          if (inData) {
            if (line === ".") {
              inData = false;
              messages.push({ to, data });
              to = [];
              data = "";
              socket.write("250 OK queued\r\n");
            } else data += line + "\n";
            continue;
          }
          const verb = line.slice(0, 4).toUpperCase();
          if (verb === "EHLO" || verb === "HELO") socket.write("250 fake\r\n");
          else if (verb === "MAIL") socket.write("250 OK\r\n");
          else if (verb === "RCPT") {
            if (line.includes("refused.example")) socket.write("550 No such user\r\n");
            else {
              to.push(line.replace(/^RCPT TO:<(.*)>.*$/i, "$1"));
              socket.write("250 OK\r\n");
            }
          } else if (verb === "DATA") {
            inData = true;
            socket.write("354 go ahead\r\n");
          } else if (verb === "QUIT") {
            socket.end("221 bye\r\n");
          } else socket.write("250 OK\r\n");
        }
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as { port: number }).port;
    return { port, messages, close: () => new Promise((resolve) => server.close(() => resolve())) };
  }

  test("with SMTP_URL the invitation goes to the mail server; a refused message lands in the outbox with the error", async () => {
    const smtp = await fakeSmtp();
    const app = await startTestApp({ smtpUrl: `smtp://127.0.0.1:${smtp.port}`, emailFrom: "invites@parley.test" });
    try {
      assertSuccess(await app.api(app.users.admin, "POST", "/invites", { invitee_emails: "pat@example.net", stream_ids: [] }));
      assert.equal(smtp.messages.length, 1);
      assert.deepEqual(smtp.messages[0]!.to, ["pat@example.net"]);
      // Quoted-printable: soft line breaks end in "=".
      const data = smtp.messages[0]!.data.replace(/=\n/g, "");
      assert.match(data, /^From: invites@parley\.test$/m);
      assert.match(data, /^Subject: Adam Admin invited you to join Test Org$/m);
      const key = (await app.services.storage.db.selectFrom("invitations").select("confirmation_key").executeTakeFirstOrThrow()).confirmation_key;
      assert.ok(data.includes(`http://parley.test/join/${key}/`), data);
      const outbox = path.join(app.services.config.dataDir, "outbox");
      assert.equal(fs.existsSync(outbox), false);

      // The invitation still succeeds when the server refuses the message; the operator finds it in the outbox.
      assertSuccess(await app.api(app.users.admin, "POST", "/invites", { invitee_emails: "sam@refused.example", stream_ids: [] }));
      const files = fs.readdirSync(outbox);
      assert.equal(files.length, 1);
      const filed = JSON.parse(fs.readFileSync(path.join(outbox, files[0]!), "utf8"));
      assert.equal(filed.to, "sam@refused.example");
      assert.match(filed.smtp_error, /550/);
    } finally {
      await app.close();
      await smtp.close();
    }
  });
});
