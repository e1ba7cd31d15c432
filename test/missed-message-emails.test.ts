// Missed-message emails (issue 29), end to end: a real SMTP server
// (smtp-server) in this process receives what Parley sends through SMTP_URL;
// mailparser reads the MIME. Time is moved on through services.now() so a
// batch falls due when the test says, not after a wall-clock wait.
import assert from "node:assert/strict";
import { after, before, beforeEach, describe, test } from "node:test";
import type { ParsedMail } from "mailparser";
import { parseUserSettings } from "../src/domain/user-settings.ts";
import { MISSED_MESSAGE_CHECK_JOB, MISSED_MESSAGE_EMAIL_JOB, type MissedMessageCheckJob } from "../src/jobs/names.ts";
import { enqueueJob } from "../src/jobs/queue.ts";
import { assertSuccess, jobsSettled, pendingJobs, startJobRunner, startTestApp, uniqueName, type TestApp, type TestUser } from "./helpers.ts";
import { startSmtpCapture, type SmtpCapture } from "./smtp-capture.ts";

let t: TestApp;
let smtp: SmtpCapture;
/** Seconds added to the real clock: moving it on makes a pending batch due. */
let offset = 0;

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

const BATCH_SECONDS = 60;

/** A fresh user (no event queue from earlier tests), batching at BATCH_SECONDS. */
async function recipient(settings: Record<string, unknown> = {}): Promise<TestUser> {
  const user = await t.createUser(uniqueName("Reader"));
  assertSuccess(await t.api(user, "PATCH", "/settings", { email_notifications_batching_period_seconds: BATCH_SECONDS, ...settings }));
  return user;
}

async function channelWith(members: TestUser[]): Promise<{ id: number; name: string }> {
  const name = uniqueName("mm");
  assertSuccess(await t.api(t.users.owner, "POST", "/users/me/subscriptions", { subscriptions: [{ name }] }));
  // Each joins by themself: being subscribed by someone else brings a Notification Bot DM (and its email).
  for (const member of members) assertSuccess(await t.api(member, "POST", "/users/me/subscriptions", { subscriptions: [{ name }] }));
  const id = assertSuccess(await t.api(t.users.owner, "GET", "/get_stream_id", { stream: name })).stream_id as number;
  return { id, name };
}

async function send(sender: TestUser, params: Record<string, unknown>): Promise<number> {
  return assertSuccess(await t.api(sender, "POST", "/messages", params)).id as number;
}

/** Checks queued as an earlier version queued them are done (a send decides in its own transaction); the batch is still waiting. */
async function decided(): Promise<void> {
  await jobsSettled(t.services, [MISSED_MESSAGE_CHECK_JOB]);
}

/** Moves the clock past the batching period and waits for every job. */
async function batchGoesOut(): Promise<void> {
  await decided();
  offset += BATCH_SECONDS + 1;
  t.services.jobs?.wake();
  await jobsSettled(t.services);
}

const mailsTo = (user: TestUser) => smtp.received.filter((m) => m.to && !Array.isArray(m.to) && m.to.value.some((a) => a.address === user.email));

async function fullName(user: TestUser): Promise<string> {
  return assertSuccess(await t.api(user, "GET", "/users/me")).full_name as string;
}

describe("missed-message emails", () => {
  test("an offline user gets a direct message by email after the batching period, multipart, with List-Unsubscribe", async () => {
    const reader = await recipient();
    const linked = await channelWith([]);
    await send(t.users.member, { type: "direct", to: [reader.id], content: `Hello **there**, see [the docs](/help/) and #**${linked.name}**` });
    await decided();
    // Not before the batching period is over.
    assert.equal((await pendingJobs(t.services, MISSED_MESSAGE_EMAIL_JOB)).length, 1);
    assert.equal(mailsTo(reader).length, 0);
    await batchGoesOut();
    const [mail, ...rest] = mailsTo(reader);
    assert.ok(mail);
    assert.equal(rest.length, 0);
    assert.equal(mail.subject, "DMs with Max Member");
    assert.match(mail.text ?? "", /Max Member:\nHello there, see the docs/);
    const html = String(mail.html);
    assert.match(html, /<strong>there<\/strong>/);
    // Links made absolute against EXTERNAL_URL.
    assert.match(html, /href="http:\/\/parley\.test\/help\/"/);
    assert.match(html, /href="http:\/\/parley\.test\/#narrow\/channel\//);
    // A link to the conversation in the web client.
    assert.match(mail.text ?? "", new RegExp(`http://parley\\.test/#narrow/dm/${Math.min(reader.id, t.users.member.id)},${Math.max(reader.id, t.users.member.id)}/near/\\d+`));
    assert.match(listUnsubscribe(mail), /^List-Unsubscribe:\s*<http:\/\/parley\.test\/accounts\/unsubscribe\/missed_messages\/\d+\.[A-Za-z0-9_-]{43}>$/);
    // The rows are gone with the email.
    assert.equal(await rowsOf(reader), 0);
  });

  test("a personal mention, an alert word and a followed topic each bring an email; a plain channel message does not", async () => {
    const mentioned = await recipient();
    const alerted = await recipient();
    const follower = await recipient();
    const bystander = await recipient();
    const channel = await channelWith([mentioned, alerted, follower, bystander]);
    assertSuccess(await t.api(alerted, "POST", "/users/me/alert_words", { alert_words: JSON.stringify(["pineapple"]) }));
    assertSuccess(await t.api(follower, "POST", "/user_topics", { stream_id: channel.id, topic: "fruit", visibility_policy: 3 }));
    await send(t.users.owner, { type: "stream", to: channel.id, topic: "fruit", content: `@**${await fullName(mentioned)}** the pineapple is here` });
    await send(t.users.owner, { type: "stream", to: channel.id, topic: "other", content: "nothing for anyone" });
    await batchGoesOut();
    for (const user of [mentioned, alerted, follower]) {
      const mails = mailsTo(user);
      assert.equal(mails.length, 1, `one email for ${user.email}`);
      assert.equal(mails[0]!.subject, `#${channel.name} > fruit`);
      assert.match(mails[0]!.text ?? "", /the pineapple is here/);
    }
    assert.match(mailsTo(mentioned)[0]!.text ?? "", /Olivia Owner mentioned you in/);
    assert.match(mailsTo(follower)[0]!.text ?? "", /topic you follow/);
    // Followed-topic emails unsubscribe from followed-topic emails.
    assert.match(listUnsubscribe(mailsTo(follower)[0]!), /\/accounts\/unsubscribe\/followed_topics\//);
    assert.match(listUnsubscribe(mailsTo(mentioned)[0]!), /\/accounts\/unsubscribe\/missed_messages\//);
    assert.equal(mailsTo(bystander).length, 0);
  });

  test("wildcard mentions follow wildcard_mentions_notify", async () => {
    const hears = await recipient();
    const deaf = await recipient({ wildcard_mentions_notify: false });
    const channel = await channelWith([hears, deaf]);
    await send(t.users.owner, { type: "stream", to: channel.id, topic: "all hands", content: "@**all** meeting now" });
    await batchGoesOut();
    assert.equal(mailsTo(hears).length, 1);
    assert.match(mailsTo(hears)[0]!.text ?? "", /mentioned everyone/);
    assert.equal(mailsTo(deaf).length, 0);
  });

  test("a channel's email_notifications on: every message of the channel, not only mentions", async () => {
    const listener = await recipient();
    const channel = await channelWith([listener]);
    assertSuccess(
      await t.api(listener, "POST", "/users/me/subscriptions/properties", {
        subscription_data: JSON.stringify([{ stream_id: channel.id, property: "email_notifications", value: true }]),
      }),
    );
    await send(t.users.owner, { type: "stream", to: channel.id, topic: "anything", content: "plain news" });
    await batchGoesOut();
    assert.equal(mailsTo(listener).length, 1);
    assert.match(mailsTo(listener)[0]!.text ?? "", /New messages in #.* > anything[\s\S]*plain news/);
  });

  test("the send itself records the email owed: its row and the user's job commit with the message, no check job", async () => {
    const reader = await recipient();
    // With the runner stopped, nothing but the send's own transaction can have written them.
    await t.services.jobs!.stop();
    try {
      const id = await send(t.users.member, { type: "direct", to: [reader.id], content: "recorded with the message" });
      const rows = await t.services.storage.db.selectFrom("missed_message_emails").select(["message_id", "trigger"]).where("user_id", "=", reader.id).execute();
      assert.deepEqual(rows, [{ message_id: id, trigger: "direct_message" }]);
      assert.deepEqual(await pendingJobs(t.services, MISSED_MESSAGE_CHECK_JOB), []);
      assert.deepEqual(await pendingJobs(t.services, MISSED_MESSAGE_EMAIL_JOB), [{ user_id: reader.id }]);
    } finally {
      t.services.jobs = startJobRunner(t.services);
    }
    await batchGoesOut();
    assert.equal(mailsTo(reader).length, 1);
  });

  test("one message owing several people: each gets a row in their own batch, and a job unless one is queued", async () => {
    const waiting = await recipient();
    const fresh = await recipient();
    await send(t.users.member, { type: "direct", to: [waiting.id], content: "starts a batch" });
    await decided();
    const [started] = await scheduledAts(waiting);
    assert.ok(started !== undefined);
    offset += 10;
    const sentFrom = t.services.nowMs();
    const id = await send(t.users.member, { type: "direct", to: [waiting.id, fresh.id], content: "to both" });
    const sentBy = t.services.nowMs();
    await decided();
    // The waiting batch keeps its time; the fresh one starts at the send plus the batching period.
    assert.deepEqual(await scheduledAts(waiting), [started, started]);
    const [freshAt, ...more] = await scheduledAts(fresh);
    assert.equal(more.length, 0);
    assert.ok(freshAt! >= sentFrom + BATCH_SECONDS * 1000 && freshAt! <= sentBy + BATCH_SECONDS * 1000, `${freshAt} within the send's second`);
    const rows = await t.services.storage.db.selectFrom("missed_message_emails").select(["user_id", "trigger"]).where("message_id", "=", id).orderBy("user_id").execute();
    assert.deepEqual(rows, [waiting.id, fresh.id].sort((a, b) => a - b).map((user_id) => ({ user_id, trigger: "direct_message" })));
    // One job each: the waiting user's was queued by the first DM and due with its batch.
    const jobs = await t.services.storage.db.selectFrom("jobs").select(["payload", "run_at"]).where("name", "=", MISSED_MESSAGE_EMAIL_JOB).where("status", "=", "queued").execute();
    const runAt = (user: TestUser) => jobs.filter((j) => (JSON.parse(j.payload) as { user_id: number }).user_id === user.id).map((j) => Number(j.run_at));
    assert.deepEqual(runAt(waiting), [started]);
    assert.deepEqual(runAt(fresh), [freshAt]);
    await batchGoesOut();
    assert.equal(mailsTo(fresh).length, 1);
    assert.deepEqual(mailsTo(waiting).map((m) => m.subject).sort(), ["DMs with Max Member", `Group DMs with Max Member and ${await fullName(fresh)}`].sort());
    assert.equal(await rowsOf(waiting), 0);
    assert.equal(await rowsOf(fresh), 0);
  });

  test("a check queued by an earlier version, run twice (a crash before its job ended), owes one email: one row, one job", async () => {
    const reader = await recipient();
    const id = await send(t.users.member, { type: "direct", to: [reader.id], content: "only once" });
    await decided();
    const again: MissedMessageCheckJob = { realm_id: t.realm.id, message_id: id, channel: null, candidates: { [reader.id]: [] } };
    await enqueueJob(t.services.storage.db, { afterCommit: (c) => c() }, t.services, MISSED_MESSAGE_CHECK_JOB, again);
    await decided();
    assert.equal(await rowsOf(reader), 1);
    assert.deepEqual(await pendingJobs(t.services, MISSED_MESSAGE_EMAIL_JOB), [{ user_id: reader.id }]);
    await batchGoesOut();
    assert.equal(mailsTo(reader).length, 1);
  });

  test("a user with an active client (event queue polling, presence active) gets no email", async () => {
    const online = await recipient();
    await t.register(online);
    assertSuccess(await t.api(online, "POST", "/users/me/presence", { status: "active" }));
    await send(t.users.member, { type: "direct", to: [online.id], content: "you are here" });
    await batchGoesOut();
    assert.equal(mailsTo(online).length, 0);
    assert.equal(await rowsOf(online), 0);
  });

  test("batching: messages within the period go out as one email per conversation", async () => {
    const reader = await recipient();
    const channel = await channelWith([reader]);
    const name = await fullName(reader);
    await send(t.users.member, { type: "direct", to: [reader.id], content: "first DM" });
    await send(t.users.owner, { type: "stream", to: channel.id, topic: "news", content: `@**${name}** first mention` });
    await send(t.users.member, { type: "direct", to: [reader.id], content: "second DM" });
    await send(t.users.owner, { type: "stream", to: channel.id, topic: "news", content: `@**${name}** second mention` });
    await decided();
    // One job for the user's batch, however many messages.
    assert.deepEqual(await pendingJobs(t.services, MISSED_MESSAGE_EMAIL_JOB), [{ user_id: reader.id }]);
    await batchGoesOut();
    const mails = mailsTo(reader);
    assert.equal(mails.length, 2);
    const dm = mails.find((m) => m.subject === "DMs with Max Member");
    const topic = mails.find((m) => m.subject === `#${channel.name} > news`);
    assert.ok(dm && topic);
    assert.match(dm.text ?? "", /first DM[\s\S]*second DM/);
    assert.match(topic.text ?? "", /first mention[\s\S]*second mention/);
  });

  test("a message read or deleted before the batch goes out is left out; nothing left, no email", async () => {
    const reader = await recipient();
    const read = await send(t.users.member, { type: "direct", to: [reader.id], content: "read it already" });
    const kept = await send(t.users.member, { type: "direct", to: [reader.id], content: "still unread" });
    await decided();
    assertSuccess(await t.api(reader, "POST", "/messages/flags", { messages: JSON.stringify([read]), op: "add", flag: "read" }));
    await batchGoesOut();
    assert.equal(mailsTo(reader).length, 1);
    assert.doesNotMatch(mailsTo(reader)[0]!.text ?? "", /read it already/);
    assert.match(mailsTo(reader)[0]!.text ?? "", /still unread/);
    assert.ok(kept > read);

    smtp.received.length = 0;
    const other = await recipient();
    const gone = await send(t.users.owner, { type: "direct", to: [other.id], content: "deleted soon" });
    const alsoRead = await send(t.users.owner, { type: "direct", to: [other.id], content: "read soon" });
    await decided();
    assertSuccess(await t.api(t.users.owner, "DELETE", `/messages/${gone}`));
    assertSuccess(await t.api(other, "POST", "/messages/flags", { messages: JSON.stringify([alsoRead]), op: "add", flag: "read" }));
    await batchGoesOut();
    assert.equal(mailsTo(other).length, 0);
    assert.equal(await rowsOf(other), 0);
  });

  test("settings off: no email for DMs and mentions, nor for followed topics", async () => {
    const off = await recipient({ enable_offline_email_notifications: false });
    const noFollowed = await recipient({ enable_followed_topic_email_notifications: false });
    const channel = await channelWith([off, noFollowed]);
    assertSuccess(await t.api(noFollowed, "POST", "/user_topics", { stream_id: channel.id, topic: "quiet", visibility_policy: 3 }));
    await send(t.users.member, { type: "direct", to: [off.id], content: "nobody reads email" });
    await send(t.users.owner, { type: "stream", to: channel.id, topic: "quiet", content: `@**${await fullName(off)}** hi` });
    await batchGoesOut();
    assert.equal(mailsTo(off).length, 0);
    assert.equal(mailsTo(noFollowed).length, 0);
  });

  test("content hidden by the user's setting, then by the organization's: a 'new message' email only", async () => {
    const private1 = await recipient({ message_content_in_email_notifications: false });
    await send(t.users.member, { type: "direct", to: [private1.id], content: "secret plans" });
    await batchGoesOut();
    const [mail] = mailsTo(private1);
    assert.ok(mail);
    assert.equal(mail.subject, "New messages");
    assert.match(mail.text ?? "", /You have a new message from Max Member/);
    assert.match(mail.text ?? "", /you have disabled message content/);
    assert.doesNotMatch(`${mail.text} ${String(mail.html)}`, /secret plans/);

    smtp.received.length = 0;
    assertSuccess(await t.api(t.users.owner, "PATCH", "/realm", { message_content_allowed_in_email_notifications: false }));
    try {
      const reader = await recipient();
      await send(t.users.member, { type: "direct", to: [reader.id], content: "org secret" });
      await batchGoesOut();
      const [orgMail] = mailsTo(reader);
      assert.ok(orgMail);
      assert.match(orgMail.text ?? "", /your organization has disabled message content/);
      assert.doesNotMatch(`${orgMail.text} ${String(orgMail.html)}`, /org secret/);
    } finally {
      assertSuccess(await t.api(t.users.owner, "PATCH", "/realm", { message_content_allowed_in_email_notifications: true }));
    }
  });

  test("the unsubscribe link works without signing in, turns the setting off (with its event); forged links get the error page", async () => {
    const reader = await recipient();
    await send(t.users.member, { type: "direct", to: [reader.id], content: "unsubscribe me" });
    await batchGoesOut();
    const link = /http:\/\/parley\.test(\/accounts\/unsubscribe\/missed_messages\/[^\s>]+)/.exec(mailsTo(reader)[0]?.text ?? "")?.[1];
    assert.ok(link);
    t.clearEvents();
    const res = await fetch(`${t.url}${link}`);
    assert.equal(res.status, 200);
    assert.match(await res.text(), /You will no longer receive emails about direct messages and mentions/);
    assert.equal((await settingsOf(reader)).enable_offline_email_notifications, false);
    assert.deepEqual(
      t.eventsFor(reader.id, "user_settings", "update").map((e) => [e.property, e.value]),
      [["enable_offline_email_notifications", false]],
    );
    // Now off: the next DM brings no email.
    smtp.received.length = 0;
    await send(t.users.member, { type: "direct", to: [reader.id], content: "after unsubscribing" });
    await batchGoesOut();
    assert.equal(mailsTo(reader).length, 0);

    const token = link.split("/").pop()!;
    const forged = `${token.slice(0, -1)}${token.endsWith("A") ? "B" : "A"}`;
    const otherUser = token.replace(/^\d+/, String(t.users.member.id));
    for (const path of [
      `/accounts/unsubscribe/missed_messages/${forged}`,
      `/accounts/unsubscribe/missed_messages/${otherUser}`,
      `/accounts/unsubscribe/followed_topics/${token}`,
      `/accounts/unsubscribe/digest/${token}`,
      `/accounts/unsubscribe/missed_messages/garbage`,
    ]) {
      const bad = await fetch(`${t.url}${path}`);
      assert.equal(bad.status, 200, path);
      assert.match(await bad.text(), /Unknown email unsubscribe request/, path);
    }
    // The forged links changed nobody's settings.
    assert.equal((await settingsOf(t.users.member)).enable_offline_email_notifications, true);
  });
});

/** The raw List-Unsubscribe header line (mailparser folds List-* headers into an object). */
function listUnsubscribe(mail: ParsedMail): string {
  return mail.headerLines.find((h) => h.key === "list-unsubscribe")?.line.replace(/\r?\n\s+/g, "") ?? "";
}

async function settingsOf(user: TestUser) {
  const row = await t.services.storage.db.selectFrom("users").select("settings").where("id", "=", user.id).executeTakeFirstOrThrow();
  return parseUserSettings(row.settings);
}

async function rowsOf(user: TestUser): Promise<number> {
  const { n } = await t.services.storage.db
    .selectFrom("missed_message_emails")
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .where("user_id", "=", user.id)
    .executeTakeFirstOrThrow();
  return Number(n);
}

/** The scheduled times (UNIX ms) of `user`'s owed emails, oldest message first. */
async function scheduledAts(user: TestUser): Promise<number[]> {
  const rows = await t.services.storage.db.selectFrom("missed_message_emails").select("scheduled_at").where("user_id", "=", user.id).orderBy("message_id").execute();
  return rows.map((r) => Number(r.scheduled_at));
}
