// Weekly digest emails, end to end: a real SMTP server (smtp-server) in this
// process receives what Parley sends through SMTP_URL; mailparser reads the
// MIME. Days pass by moving services.now() on, never by waiting: people join,
// the clock moves three days, they talk, it moves three more and the daily
// check (whose job every server seeds) is made due. Each case runs on a day
// of its own, and the organization's digests are on only around its check,
// so a check the runner makes on an in-between day sends nothing.
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";
import type { ParsedMail } from "mailparser";
import { DIGEST_CUTOFF_DAYS, digestWeekday, utcDay } from "../src/domain/digest.ts";
import { Role } from "../src/domain/roles.ts";
import { parseUserSettings } from "../src/domain/user-settings.ts";
import { DIGEST_CHECK_JOB, DIGEST_EMAIL_JOB, type DigestCheckJob, type DigestEmailJob } from "../src/jobs/names.ts";
import { enqueueJob } from "../src/jobs/queue.ts";
import { ensureDigestCheck } from "../src/workers/digest-emails.ts";
import { assertSuccess, jobsSettled, startTestApp, uniqueName, type TestApp, type TestUser } from "./helpers.ts";
import { startSmtpCapture, type SmtpCapture } from "./smtp-capture.ts";

let t: TestApp;
let smtp: SmtpCapture;
/** Seconds added to the real clock. */
let offset = 0;
const DAY = 86_400;

before(async () => {
  smtp = await startSmtpCapture();
  t = await startTestApp({ smtpUrl: smtp.url });
  t.services.now = () => Math.floor(Date.now() / 1000) + offset;
});
after(async () => {
  await t?.close();
  await smtp?.close();
});
beforeEach(() => {
  smtp.received.length = 0;
});

const db = () => t.services.storage.db;

const isDigest = (m: ParsedMail) => (m.subject ?? "").startsWith("Parley digest for ");

/** Digests (not the missed-message emails that days passing also bring) sent to `user`. */
const digestsTo = (user: TestUser) =>
  smtp.received.filter((m) => isDigest(m) && m.to && !Array.isArray(m.to) && m.to.value.some((a) => a.address === user.email));

async function realmDigests(enabled: boolean, weekday?: number): Promise<void> {
  assertSuccess(await t.api(t.users.owner, "PATCH", "/realm", { digest_emails_enabled: enabled, ...(weekday === undefined ? {} : { digest_weekday: weekday }) }));
}

/** Turns digests on for the weekday `days` from now, then moves the clock there. */
async function daysPassUntilDigestDay(days: number, enabled = true): Promise<void> {
  await realmDigests(enabled, digestWeekday(t.services.nowMs() + days * DAY * 1000));
  offset += days * DAY;
}

/** Makes today's check due (or lets the one the runner already made finish), waits for every job, then turns digests off again. */
async function checkRuns(): Promise<number> {
  const now = t.services.nowMs();
  const day = utcDay(now);
  await db().updateTable("jobs").set({ run_at: now }).where("name", "=", DIGEST_CHECK_JOB).where("status", "=", "queued").where("run_at", ">", now).execute();
  t.services.jobs?.wake();
  const deadline = Date.now() + 30_000;
  while (!(await db().selectFrom("digest_days").select("day").where("day", "=", day).executeTakeFirst())) {
    if (Date.now() > deadline) throw new Error(`no digest check ran for ${day}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  await jobsSettled(t.services);
  await realmDigests(false);
  return Math.floor(now / 1000) - DIGEST_CUTOFF_DAYS * DAY;
}

async function newChannel(options: { inviteOnly?: boolean; members: TestUser[] }): Promise<{ id: number; name: string }> {
  const name = uniqueName("digest");
  assertSuccess(
    await t.api(t.users.owner, "POST", "/users/me/subscriptions", {
      subscriptions: [{ name }],
      invite_only: options.inviteOnly ?? false,
      principals: [t.users.owner.id, ...options.members.map((m) => m.id)],
    }),
  );
  const id = assertSuccess(await t.api(t.users.owner, "GET", "/get_stream_id", { stream: name })).stream_id as number;
  return { id, name };
}

async function say(sender: TestUser, channel: { name: string }, topic: string, content: string): Promise<number> {
  return assertSuccess(await t.api(sender, "POST", "/messages", { type: "stream", to: channel.name, topic, content })).id as number;
}

async function settingsOf(user: TestUser) {
  const row = await db().selectFrom("users").select("settings").where("id", "=", user.id).executeTakeFirstOrThrow();
  return parseUserSettings(row.settings);
}

async function lastDigestOf(user: TestUser): Promise<number | undefined> {
  const row = await db().selectFrom("user_digests").select("last_sent_at").where("user_id", "=", user.id).executeTakeFirst();
  return row === undefined ? undefined : Number(row.last_sent_at);
}

/** The raw List-Unsubscribe header line (mailparser folds List-* headers into an object). */
function listUnsubscribe(mail: ParsedMail): string {
  return mail.headerLines.find((h) => h.key === "list-unsubscribe")?.line.replace(/\r?\n\s+/g, "") ?? "";
}

async function queuedChecks(): Promise<number> {
  return (await db().selectFrom("jobs").select("id").where("name", "=", DIGEST_CHECK_JOB).where("status", "<>", "failed").execute()).length;
}

describe("weekly digest emails", () => {
  let reader: TestUser;
  let readerDigest: ParsedMail;
  let firstCutoff: number;

  test("the server seeds one daily check", async () => {
    assert.equal(await queuedChecks(), 1);
    await ensureDigestCheck(t.services);
    assert.equal(await queuedChecks(), 1, "a second start seeds nothing");
  });

  test("on the weekday, an inactive person gets the week's hot topics, new channels and people; the active, the unsubscribed, bots, the deactivated and newcomers get none", async () => {
    reader = await t.createUser(uniqueName("Reader"));
    const guest = await t.createUser(uniqueName("Guest Reader"), Role.GUEST);
    const active = await t.createUser(uniqueName("Active"));
    const optedOut = await t.createUser(uniqueName("Opted Out"));
    const gone = await t.createUser(uniqueName("Gone"));
    const [ann, ben, cat] = [await t.createUser("Ann Author"), await t.createUser("Ben Author"), await t.createUser("Cat Author")];
    assertSuccess(await t.api(optedOut, "PATCH", "/settings", { enable_digest_emails: false }));

    offset += 3 * DAY;
    const newcomer = await t.createUser("Nina Newcomer");
    const everyone = [reader, guest, active, optedOut, gone, newcomer, ann, ben, cat];
    const open = await newChannel({ members: everyone });
    const inner = await newChannel({ inviteOnly: true, members: [reader, ann] });
    const outer = await newChannel({ inviteOnly: true, members: [ann, ben, cat] });
    const muted = await newChannel({ members: [reader, ann, ben, cat] });
    assertSuccess(await t.api(reader, "POST", "/users/me/subscriptions/properties", { subscription_data: [{ stream_id: muted.id, property: "is_muted", value: true }] }));

    const launchFirst = await say(ann, open, "launch", "We launch on **Friday**");
    await say(ben, open, "launch", "Ready here");
    await say(cat, open, "launch", "Same");
    await say(ann, open, "lunch", "Pizza?");
    await say(ben, open, "lunch", "Sushi");
    for (let i = 1; i <= 5; i += 1) await say(ann, open, "monologue", `thought ${i}`);
    await say(t.users.bot, open, "bot news", "beep");
    await say(ann, inner, "inner circle", "just us");
    for (const who of [ann, ben, cat, ann, ben, cat]) await say(who, outer, "outer circle", "not for the reader");
    for (const who of [ann, ben, cat]) await say(who, muted, "muted stuff", "the reader muted this");

    assertSuccess(await t.api(active, "POST", "/users/me/presence", { status: "active" }));
    assertSuccess(await t.api(t.users.owner, "DELETE", `/users/${gone.id}`));

    await daysPassUntilDigestDay(3);
    firstCutoff = await checkRuns();

    const [mail, ...more] = digestsTo(reader);
    assert.ok(mail, "the inactive reader gets a digest");
    assert.equal(more.length, 0);
    readerDigest = mail;
    assert.equal(mail.subject, "Parley digest for Test Org");
    const text = mail.text ?? "";
    const html = String(mail.html);
    // Zulip's hot topics: the two with most people (launch 3, lunch 2), then the longest (monologue 5, inner circle 1); the bots' topic is last.
    const order = ["launch", "lunch", "monologue", "inner circle"].map((topic) => text.indexOf(`> ${topic}\n`));
    assert.ok(order.every((i) => i >= 0), text);
    assert.deepEqual([...order].sort((a, b) => a - b), order, "in Zulip's order");
    assert.doesNotMatch(text, /bot news/);
    // Channels the reader is not in, or muted, never show.
    assert.doesNotMatch(text, /outer circle|not for the reader/);
    assert.doesNotMatch(text, /muted stuff/);
    // Two messages of each, then a count of the rest by the people in it.
    assert.match(text, /Ann Author: We launch on Friday\nBen Author: Ready here\n\+ 1 more message by Ann Author, Ben Author and Cat Author\./);
    assert.match(text, /Ann Author: thought 1\nAnn Author: thought 2\n\+ 3 more messages by Ann Author\./);
    assert.match(html, /<strong>Friday<\/strong>/);
    assert.ok(html.includes(`href="http://parley.test/#narrow/channel/${open.id}-`), html);
    assert.ok(html.includes(`/topic/launch/near/${launchFirst}"`), html);
    // New channels: the public ones (the muted one too), not the private ones, even one the reader is in.
    const newChannels = /\*\* New channels \*\*\n {4}(.*)\./.exec(text)?.[1]?.split(", ") ?? [];
    assert.ok(newChannels.includes(open.name) && newChannels.includes(muted.name), text);
    assert.ok(!newChannels.includes(inner.name) && !newChannels.includes(outer.name), text);
    // People who joined in the window.
    assert.match(text, /\*\* New users \*\*\n {4}Nina Newcomer joined Test Org\./);
    assert.match(listUnsubscribe(mail), /^List-Unsubscribe:\s*<http:\/\/parley\.test\/accounts\/unsubscribe\/digest\/\d+\.[A-Za-z0-9_-]{43}>$/);
    assert.match(mail.headerLines.find((h) => h.key === "list-unsubscribe-post")?.line ?? "", /^List-Unsubscribe-Post:\s*List-Unsubscribe=One-Click$/);
    assert.ok(await lastDigestOf(reader));

    // A guest sees the conversations of their channel, but no public channel list (only web-public ones would show).
    const [guestMail] = digestsTo(guest);
    assert.ok(guestMail);
    assert.match(guestMail.text ?? "", /> launch\n/);
    assert.doesNotMatch(guestMail.text ?? "", /New channels/);
    assert.doesNotMatch(guestMail.text ?? "", /inner circle/);

    for (const [who, why] of [
      [active, "active this week"],
      [optedOut, "digests off"],
      [gone, "deactivated"],
      [t.users.bot, "a bot"],
      [newcomer, "joined this week"],
    ] as const) {
      assert.equal(digestsTo(who).length, 0, why);
      assert.equal(await lastDigestOf(who), undefined, why);
    }
    assert.equal(await queuedChecks(), 1, "the check queued tomorrow's");
  });

  test("no second digest the same week: not from a repeated job, a second check of the day, nor the next day's check", async () => {
    const sentAt = await lastDigestOf(reader);
    const again: DigestEmailJob = { realm_id: t.realm.id, user_ids: [reader.id], cutoff: firstCutoff };
    await enqueueJob(db(), { afterCommit: (c) => c() }, t.services, DIGEST_EMAIL_JOB, again);
    // A second chain's check of the same day (no key: it runs at once).
    const check: DigestCheckJob = { day: utcDay(t.services.nowMs()) };
    await realmDigests(true, digestWeekday(t.services.nowMs()));
    await enqueueJob(db(), { afterCommit: (c) => c() }, t.services, DIGEST_CHECK_JOB, check);
    await jobsSettled(t.services);
    assert.equal(digestsTo(reader).length, 0);
    assert.equal(await lastDigestOf(reader), sentAt);
    assert.equal(await queuedChecks(), 1, "the second check queued no second chain");

    // The next day, with new traffic and the weekday moved to it: still none for the reader.
    const channel = await newChannel({ members: [reader] });
    await say(t.users.owner, channel, "tomorrow", "more news");
    await daysPassUntilDigestDay(1);
    await checkRuns();
    assert.equal(digestsTo(reader).length, 0);
    assert.equal(await lastDigestOf(reader), sentAt);
  });

  test("nothing when the organization has digests off", async () => {
    const person = await t.createUser(uniqueName("Org Off"));
    offset += 3 * DAY;
    const channel = await newChannel({ members: [person] });
    await say(t.users.owner, channel, "news", "something happened");
    await daysPassUntilDigestDay(3, false);
    await checkRuns();
    assert.equal(digestsTo(person).length, 0);
    assert.equal(await lastDigestOf(person), undefined);
  });

  test("with message content hidden, counts instead of conversations", async () => {
    const hidden = await t.createUser(uniqueName("Hidden"));
    assertSuccess(await t.api(hidden, "PATCH", "/settings", { message_content_in_email_notifications: false }));
    offset += 3 * DAY;
    const channel = await newChannel({ members: [hidden] });
    await say(t.users.owner, channel, "secret", "classified words");
    await say(t.users.member, channel, "secret", "more classified words");
    await daysPassUntilDigestDay(3);
    await checkRuns();
    const [mail] = digestsTo(hidden);
    assert.ok(mail);
    // Two messages by people (the Notification Bot's do not count), and the new channel.
    assert.match(mail.text ?? "", /You have 2 new messages, and there are 1 new channels in Test Org\./);
    assert.match(mail.text ?? "", /you have chosen to hide message content/);
    assert.doesNotMatch(`${mail.text ?? ""}${String(mail.html)}`, /classified|secret/);
  });

  test("no email when there is nothing to tell", async () => {
    const quiet = await t.createUser(uniqueName("Quiet"));
    // Nothing new in the last five days: the channels and messages of the cases before are older.
    await daysPassUntilDigestDay(6);
    await checkRuns();
    assert.equal(digestsTo(quiet).length, 0);
    assert.equal(await lastDigestOf(quiet), undefined, "an empty digest is not counted as sent");
    assert.equal(smtp.received.filter(isDigest).length, 0);
  });

  test("the digest's unsubscribe link turns digests off and tells the user's clients", async () => {
    const link = /<([^>]+)>/.exec(listUnsubscribe(readerDigest))![1]!;
    assert.ok(link.startsWith("http://parley.test/accounts/unsubscribe/digest/"));
    t.clearEvents();
    const res = await fetch(`${t.url}${new URL(link).pathname}`, { method: "POST", body: "List-Unsubscribe=One-Click", headers: { "content-type": "application/x-www-form-urlencoded" } });
    assert.equal(res.status, 200);
    assert.match(await res.text(), /You will no longer receive digest emails from Test Org/);
    assert.equal((await settingsOf(reader)).enable_digest_emails, false);
    assert.deepEqual(
      t.eventsFor(reader.id, "user_settings", "update").map((e) => [e.property, e.value]),
      [["enable_digest_emails", false]],
    );
    // The token is for digests only: it turns off no other kind of email, and a forged one nothing.
    const token = link.split("/").pop()!;
    for (const path of [`/accounts/unsubscribe/missed_messages/${token}`, `/accounts/unsubscribe/digest/${token.replace(/^\d+/, String(t.users.member.id))}`]) {
      const bad = await fetch(`${t.url}${path}`);
      assert.match(await bad.text(), /Unknown email unsubscribe request/, path);
    }
    assert.equal((await settingsOf(reader)).enable_offline_email_notifications, true);
    assert.equal((await settingsOf(t.users.member)).enable_digest_emails, true);

    // Off now: the next week's digest skips them although there is news, which someone else in the channel gets.
    const channel = await newChannel({ members: [reader, t.users.member] });
    await say(t.users.owner, channel, "after", "news after unsubscribing");
    await daysPassUntilDigestDay(3);
    await checkRuns();
    assert.equal(digestsTo(reader).length, 0);
    assert.match(digestsTo(t.users.member)[0]?.text ?? "", /news after unsubscribing/);
  });

  test("a guest outside can_access_all_users_group hears of no new people; a member of the same channel does", async () => {
    const limited = await t.createUser(uniqueName("Limited Guest"), Role.GUEST);
    const colleague = await t.createUser(uniqueName("Colleague"));
    offset += 3 * DAY;
    await t.createUser("Olga Onboarded");
    const channel = await newChannel({ members: [limited, colleague] });
    await say(t.users.owner, channel, "plans", "the guest may read this");
    const groups = await t.systemGroupIds();
    assertSuccess(await t.api(t.users.owner, "PATCH", "/realm", { can_access_all_users_group: JSON.stringify({ new: groups["role:members"] }) }));
    try {
      await daysPassUntilDigestDay(3);
      await checkRuns();
    } finally {
      assertSuccess(await t.api(t.users.owner, "PATCH", "/realm", { can_access_all_users_group: JSON.stringify({ new: groups["role:everyone"] }) }));
    }
    const [guestMail] = digestsTo(limited);
    assert.ok(guestMail, "the guest still gets the conversations of their channel");
    assert.match(guestMail.text ?? "", /the guest may read this/);
    assert.doesNotMatch(`${guestMail.text ?? ""}${String(guestMail.html)}`, /New users|Olga Onboarded/);
    assert.match(digestsTo(colleague)[0]?.text ?? "", /Olga Onboarded joined Test Org\./);
  });

  test("with the organization hiding message content, counts and the organization's reason, for everyone", async () => {
    const person = await t.createUser(uniqueName("Org Hidden"));
    offset += 3 * DAY;
    const channel = await newChannel({ members: [person] });
    await say(t.users.owner, channel, "confidential", "org secret words");
    assertSuccess(await t.api(t.users.owner, "PATCH", "/realm", { message_content_allowed_in_email_notifications: false }));
    try {
      await daysPassUntilDigestDay(3);
      await checkRuns();
    } finally {
      assertSuccess(await t.api(t.users.owner, "PATCH", "/realm", { message_content_allowed_in_email_notifications: true }));
    }
    const [mail] = digestsTo(person);
    assert.ok(mail);
    assert.match(mail.text ?? "", /You have 1 new messages?, and there are 1 new channels in Test Org\./);
    assert.match(mail.text ?? "", /your organization hides message content in email notifications/);
    assert.doesNotMatch(`${mail.text ?? ""}${String(mail.html)}`, /org secret|confidential/);
  });
});
