// Outgoing email. With SMTP_URL set, messages go to that mail server through
// nodemailer; without it (or when the server refuses a message) each message
// is written as one JSON file under <dataDir>/outbox/, which an operator can
// read and forward by hand. Sending never fails the request that caused it,
// as in Zulip, where emails go through a queue.
import crypto from "node:crypto";
import fs from "node:fs/promises";
import path from "node:path";
import type { Transporter } from "nodemailer";
import type { Config } from "./config.ts";

export interface EmailMessage {
  to: string;
  subject: string;
  text: string;
  /** An HTML alternative of `text` (the message is then multipart/alternative). */
  html?: string;
  /** Extra header fields, e.g. List-Unsubscribe. */
  headers?: Record<string, string>;
  /** Why the server sent it, e.g. "invitation" (kept in outbox files). */
  kind: string;
}

/** Where outbox files go when no SMTP server is configured. */
export function outboxDir(config: Config): string {
  return path.join(config.dataDir, "outbox");
}

const transports = new Map<string, Transporter>();

/** nodemailer is loaded with the first message for an SMTP server: without SMTP_URL it never is. */
async function transportFor(smtpUrl: string): Promise<Transporter> {
  let transport = transports.get(smtpUrl);
  if (!transport) {
    const { default: nodemailer } = await import("nodemailer");
    // Short timeouts: the caller waits for the hand-over to the mail server.
    const url = new URL(smtpUrl);
    for (const [name, value] of [["connectionTimeout", "10000"], ["greetingTimeout", "10000"], ["socketTimeout", "20000"]] as const) {
      if (!url.searchParams.has(name)) url.searchParams.set(name, value);
    }
    transport = nodemailer.createTransport(url.toString());
    transports.set(smtpUrl, transport);
  }
  return transport;
}

/** What a message is made of, as nodemailer takes it and as an outbox file keeps it. */
function envelope(config: Config, message: EmailMessage) {
  return {
    from: config.emailFrom,
    to: message.to,
    subject: message.subject,
    text: message.text,
    ...(message.html !== undefined ? { html: message.html } : {}),
    ...(message.headers !== undefined ? { headers: message.headers } : {}),
  };
}

async function writeToOutbox(config: Config, message: EmailMessage, date: Date, smtpError?: string): Promise<string> {
  const dir = outboxDir(config);
  await fs.mkdir(dir, { recursive: true });
  // Names sort by time; the random part keeps two messages in one millisecond apart.
  const file = path.join(dir, `${date.toISOString().replace(/[:.]/g, "-")}-${crypto.randomBytes(4).toString("hex")}.json`);
  const record = {
    ...envelope(config, message),
    kind: message.kind,
    date: date.toISOString(),
    ...(smtpError ? { smtp_error: smtpError } : {}),
  };
  await fs.writeFile(file, JSON.stringify(record, null, 2) + "\n", { mode: 0o600 });
  return file;
}

export interface Logger {
  warn(obj: unknown, msg: string): void;
}

/**
 * Hands one message to the SMTP server, or files it in the outbox without
 * one. Throws when neither worked; an SMTP refusal files it in the outbox.
 */
export async function sendEmail(config: Config, message: EmailMessage, log?: Logger): Promise<void> {
  const date = new Date();
  if (config.smtpUrl === undefined) {
    await writeToOutbox(config, message, date);
    return;
  }
  try {
    await (await transportFor(config.smtpUrl)).sendMail({ ...envelope(config, message), date });
  } catch (error) {
    log?.warn({ err: error, to: message.to }, "SMTP delivery failed; message written to the outbox");
    await writeToOutbox(config, message, date, error instanceof Error ? error.message : String(error));
  }
}

/** Sends (or files) each message; errors are logged, never thrown. */
export async function sendEmails(config: Config, messages: readonly EmailMessage[], log?: Logger): Promise<void> {
  for (const message of messages) {
    try {
      await sendEmail(config, message, log);
    } catch (error) {
      log?.warn({ err: error, to: message.to }, "could not send or file an email");
    }
  }
}
