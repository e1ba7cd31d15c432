// `parley <command>`: the server and the operator's tools.
import { parseArgs, type ParseArgsConfig } from "node:util";
import { randomPassword } from "./actions/credentials.ts";
import { createRealm, RealmExistsError } from "./actions/realm.ts";
import { exportRealmToFile } from "./actions/realm-export.ts";
import { ExportType } from "./domain/realm-export.ts";
import { createUser } from "./actions/users.ts";
import { describeBackends } from "./backends.ts";
import { ConfigError, loadConfig, type Config } from "./config.ts";
import { isRole, Role } from "./domain/roles.ts";
import { ApiError } from "./errors.ts";
import { moveFiles } from "./files/move.ts";
import { openFileStore } from "./files/open.ts";
import { getDefaultRealm, getUserByLoginEmail } from "./queries/users.ts";
import { closeServices, openServices, startServer } from "./server.ts";
import type { Services } from "./services.ts";

const HELP = `Usage: parley <command> [options]

Commands:
  serve                       Run the server (creates the organization on an empty database)
  migrate                     Apply database migrations and exit
  init --org-name N --owner-email E --owner-password P [--owner-name F] [--json]
                              Create the organization and its owner on an empty database
  create-user --email E --full-name N (--password P | --bot) [--role 100|200|300|400|600] [--json]
                              Create a user, or a bot (no password) with --bot
  api-key --email E [--json]  Print a user's API key
  import zulip <export.tar.gz>
                              Import an organization exported by Zulip into an
                              empty database (see docs/import-zulip.md)
  import slack <export.zip> [--token T]
                              Import a Slack workspace export into an empty
                              database (see docs/import-slack.md); --token: a Slack
                              token, sent to fetch the files' private URLs
  move-uploads --to local|database [--delete-source]
                              Copy every uploaded file, avatar, emoji and icon to that
                              file store (from the other), checking each copy
  export <output.tar.gz> [--public | --consent | --full] [--zulip-version V]
                              Write the organization's data as a Zulip export tarball:
                              public data only, members' private data where they consented,
                              or everything (--full, the default); --zulip-version names the
                              Zulip server it is for (its major version must match)

Configuration comes from the environment: PORT, HOST, DATA_DIR, DATABASE_URL,
PG_SCHEMA, REDIS_URL, REDIS_KEY_PREFIX, UPLOAD_STORAGE, EXTERNAL_URL, FAKE_EMAIL_DOMAIN, LOG_LEVEL, PARLEY_DEV_MODE,
BODY_LIMIT_BYTES, WEBHOOK_BODY_LIMIT_BYTES, PUSH_SERVICE_URL with PUSH_SERVICE_ORG_ID and PUSH_SERVICE_ORG_KEY
(mobile push; unset: off), PUSH_RETRY_BASE_MS, INVITATION_LINK_VALIDITY_MINUTES,
INVITES_DAILY_MAX, SMTP_URL (invitation emails; unset: written to DATA_DIR/outbox),
EMAIL_FROM, SHUTDOWN_TIMEOUT_SECONDS, and for the first \`serve\` ORG_NAME and
OWNER_EMAIL (see README).`;

class UsageError extends Error {}

type Options = ParseArgsConfig["options"];

function parse(args: string[], options: Options, required: string[]) {
  let values: Record<string, string | boolean | undefined>;
  try {
    values = parseArgs({ args, options: options ?? {}, strict: true, allowPositionals: false }).values as typeof values;
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  for (const name of required) {
    if (typeof values[name] !== "string" || values[name] === "") throw new UsageError(`--${name} is required`);
  }
  return values;
}

function zuliprc(config: Config, email: string, apiKey: string): string {
  return `[api]\nemail=${email}\nkey=${apiKey}\nsite=${config.externalUrl}\n`;
}

async function withServices<T>(fn: (services: Services) => Promise<T>): Promise<T> {
  const services = await openServices(loadConfig());
  try {
    return await fn(services);
  } finally {
    await closeServices(services);
  }
}

async function requireRealm(services: Services) {
  const realm = await getDefaultRealm(services.storage.db);
  if (!realm) throw new UsageError("the database has no organization yet: run `parley init` or `parley serve` first");
  return realm;
}

function printCredentials(config: Config, heading: string, email: string, password: string, apiKey: string): void {
  process.stdout.write(
    `${heading}\n  email:    ${email}\n  password: ${password}\n  API key:  ${apiKey}\n\n` +
      `A zuliprc for the Zulip API bindings and terminal client:\n\n${zuliprc(config, email, apiKey)}\n`,
  );
}

async function serve(): Promise<void> {
  const config = loadConfig();
  const services = await openServices(config);
  if (!(await getDefaultRealm(services.storage.db))) {
    const password = randomPassword();
    const email = config.defaultOwnerEmail;
    const { owner } = await createRealm(services, {
      name: config.defaultOrgName,
      ownerEmail: email,
      ownerPassword: password,
      ownerFullName: "Owner",
    });
    printCredentials(config, `Created the organization "${config.defaultOrgName}" and its owner (shown once):`, owner.delivery_email, password, owner.api_key);
  }
  const server = await startServer(services);
  const backends = describeBackends(config);
  server.app.log.info(
    { backends },
    `Backends: database ${backends.database}; events ${backends.events}; rate limits ${backends.rateLimits}; uploads ${backends.uploads}`,
  );
  server.app.log.info(`Parley listening on ${server.url} (${services.storage.dialect})`);
  let closing = false;
  const shutdown = (signal: string) => {
    // A second signal ends the process at once.
    if (closing) process.exit(1);
    closing = true;
    const seconds = config.shutdownTimeoutMs / 1000;
    // A drain that hangs (a client that never finishes its request, a job
    // stuck on another site) must not keep a deploy waiting: its jobs are
    // taken again by another process once their leases run out.
    setTimeout(() => {
      server.app.log.error({ jobsRunning: services.jobs?.busy ?? 0 }, `${signal}: not drained after ${seconds} s (SHUTDOWN_TIMEOUT_SECONDS): exiting`);
      process.exit(1);
    }, config.shutdownTimeoutMs).unref();
    server.app.log.info(
      `${signal}: draining (no new connections, GET /health answers 503, waiting polls answered now; requests and jobs in progress finish; at most ${seconds} s)`,
    );
    server.close().then(
      () => {
        server.app.log.info(`${signal}: drained, exiting`);
        process.exit(0);
      },
      (error: unknown) => {
        server.app.log.error({ err: error }, "shutdown failed");
        process.exit(1);
      },
    );
  };
  process.on("SIGINT", () => shutdown("SIGINT"));
  process.on("SIGTERM", () => shutdown("SIGTERM"));
}

async function init(args: string[]): Promise<void> {
  const v = parse(
    args,
    {
      "org-name": { type: "string" },
      "owner-email": { type: "string" },
      "owner-password": { type: "string" },
      "owner-name": { type: "string" },
      json: { type: "boolean" },
    },
    ["org-name", "owner-email", "owner-password"],
  );
  await withServices(async (services) => {
    const { owner } = await createRealm(services, {
      name: v["org-name"] as string,
      ownerEmail: v["owner-email"] as string,
      ownerPassword: v["owner-password"] as string,
      ownerFullName: (v["owner-name"] as string | undefined) ?? "Owner",
    });
    const realmUrl = services.config.externalUrl;
    if (v.json) {
      process.stdout.write(JSON.stringify({ user_id: owner.id, email: owner.delivery_email, api_key: owner.api_key, realm_url: realmUrl }) + "\n");
    } else {
      printCredentials(services.config, "Created the organization and its owner:", owner.delivery_email, v["owner-password"] as string, owner.api_key);
    }
  });
}

async function createUserCommand(args: string[]): Promise<void> {
  const v = parse(
    args,
    {
      email: { type: "string" },
      "full-name": { type: "string" },
      password: { type: "string" },
      role: { type: "string" },
      bot: { type: "boolean" },
      json: { type: "boolean" },
    },
    ["email", "full-name"],
  );
  // Bots authenticate with API keys only; humans need a password.
  if (v.bot !== true && (typeof v.password !== "string" || v.password === "")) throw new UsageError("--password is required");
  if (v.bot === true && v.password !== undefined) throw new UsageError("bots have no password: leave out --password");
  const role = v.role === undefined ? Role.MEMBER : Number(v.role);
  if (!/^\d+$/.test(String(v.role ?? "400")) || !isRole(role)) throw new UsageError("--role must be one of 100, 200, 300, 400, 600");
  await withServices(async (services) => {
    const realm = await requireRealm(services);
    const user = await createUser(services, realm, null, {
      email: v.email as string,
      fullName: v["full-name"] as string,
      password: v.bot === true ? null : (v.password as string),
      role,
      isBot: v.bot === true,
    });
    if (v.json) {
      process.stdout.write(JSON.stringify({ user_id: user.id, email: user.delivery_email, api_key: user.api_key }) + "\n");
    } else {
      process.stdout.write(`Created ${user.is_bot ? "bot" : "user"} ${user.delivery_email} (id ${user.id}), API key ${user.api_key}\n`);
    }
  });
}

async function apiKeyCommand(args: string[]): Promise<void> {
  const v = parse(args, { email: { type: "string" }, json: { type: "boolean" } }, ["email"]);
  await withServices(async (services) => {
    const realm = await requireRealm(services);
    const user = await getUserByLoginEmail(services.storage.db, realm.id, v.email as string);
    if (!user) throw new UsageError(`no user with email ${v.email as string}`);
    process.stdout.write(v.json ? JSON.stringify({ user_id: user.id, email: user.delivery_email, api_key: user.api_key }) + "\n" : `${user.api_key}\n`);
  });
}

/** Copies the files of the other file store into `--to`; 1 when a file could not be copied or conflicts. */
async function moveUploadsCommand(args: string[]): Promise<number> {
  const v = parse(args, { to: { type: "string" }, "delete-source": { type: "boolean" } }, ["to"]);
  const to = v.to as string;
  if (to !== "local" && to !== "database") throw new UsageError("--to must be local or database");
  if (!loadConfig().databaseUrl) throw new ConfigError("move-uploads needs DATABASE_URL: the database file store is in PostgreSQL");
  return withServices(async (services) => {
    const from = to === "database" ? "local" : "database";
    const source = openFileStore(services.config, services.storage, from);
    const target = openFileStore(services.config, services.storage, to);
    const report = await moveFiles(source, target, {
      deleteSource: v["delete-source"] === true,
      progress: (key, outcome) => {
        if (outcome === "conflict") process.stderr.write(`conflict: ${key} is in ${to} with other contents; left as it is in both\n`);
      },
    });
    for (const { key, error } of report.failed) process.stderr.write(`failed: ${key}: ${error}\n`);
    const files = (n: number) => `${n} ${n === 1 ? "file" : "files"}`;
    process.stdout.write(
      `Copied ${files(report.copied)} (${report.bytes} bytes) from ${from} to ${to}, each checked (size and SHA-256); ` +
        `${files(report.present)} already there` +
        (v["delete-source"] === true ? `; removed ${files(report.deleted)} from ${from}` : "") +
        (report.conflicts.length + report.failed.length > 0 ? `; conflicts: ${report.conflicts.length}, failed: ${report.failed.length}` : "") +
        ".\n",
    );
    return report.conflicts.length + report.failed.length > 0 ? 1 : 0;
  });
}

/** `parley export`: the organization's export tarball, written to a file with progress on stdout. */
async function exportCommand(args: string[]): Promise<void> {
  const options = { public: { type: "boolean" }, consent: { type: "boolean" }, full: { type: "boolean" }, "zulip-version": { type: "string" } } as const;
  const parsed = (() => {
    try {
      return parseArgs({ args, options, strict: true, allowPositionals: true });
    } catch (error) {
      throw new UsageError((error as Error).message);
    }
  })();
  const { values: v, positionals } = parsed;
  if (positionals.length !== 1 || positionals[0] === "") throw new UsageError("export needs one output file, such as export.tar.gz");
  if ([v.public, v.consent, v.full].filter((x) => x === true).length > 1) throw new UsageError("give at most one of --public, --consent and --full");
  const zulipVersion = v["zulip-version"];
  // Zulip's import compares the major version (the text before the first dot) with its own.
  if (zulipVersion !== undefined && !/^\d+(\.\d+)*$/.test(zulipVersion)) throw new UsageError("--zulip-version takes a Zulip version such as 11.2");
  const type = v.public === true ? ExportType.PUBLIC : v.consent === true ? ExportType.FULL_WITH_CONSENT : ExportType.FULL_WITHOUT_CONSENT;
  const output = positionals[0]!;
  await withServices(async (services) => {
    const realm = await requireRealm(services);
    const stats = await exportRealmToFile(services, realm, type, output, (what) => process.stdout.write(`wrote ${what}\n`), zulipVersion);
    process.stdout.write(`Exported ${stats.messages} messages in ${stats.messageFiles} files, ${stats.attachments} attachments and ${stats.files} files to ${output}\n`);
  });
}

/** `import zulip|slack <file>`: 2 when the database already has an organization (nothing is changed). */
async function importCommand(args: string[]): Promise<number> {
  const [source, file, ...rest] = args;
  const formats = { zulip: "the export's .tar.gz file", slack: "the export's .zip file" } as const;
  if (source !== "zulip" && source !== "slack") throw new UsageError(source === undefined ? "import needs a source: zulip or slack" : `cannot import from '${source}': only zulip or slack`);
  if (file === undefined || file.startsWith("-")) throw new UsageError(`import ${source} takes one argument: ${formats[source]}`);
  // A Slack token for the files' private URLs; never printed.
  let token: string | undefined;
  if (source === "slack") {
    try {
      const { values, positionals } = parseArgs({ args: rest, options: { token: { type: "string" } }, strict: true, allowPositionals: true });
      if (positionals.length > 0) throw new UsageError(`import slack takes one argument: ${formats.slack}`);
      token = values.token;
    } catch (error) {
      throw error instanceof UsageError ? error : new UsageError((error as Error).message);
    }
    if (token === "") throw new UsageError("--token needs a Slack token");
  } else if (rest.length > 0) throw new UsageError(`import ${source} takes one argument: ${formats[source]}`);
  return withServices(async (services) => {
    if (await getDefaultRealm(services.storage.db)) {
      process.stderr.write("parley: this database already has an organization: import into an empty database (nothing was changed)\n");
      return 2;
    }
    // Loaded here, not at start: the archive readers are for this command only.
    const [run, { ImportFormatError }] = await Promise.all([
      source === "zulip"
        ? import("./import/zulip.ts").then((m) => m.importZulip)
        : import("./import/slack.ts").then((m) => (s: typeof services, zip: string, log: (line: string) => void) => m.importSlack(s, zip, log, token === undefined ? {} : { token })),
      import("./import/tarball.ts"),
    ]);
    try {
      const result = await run(services, file, (line) => process.stdout.write(`${line}\n`));
      process.stdout.write(`Imported the organization (id ${result.realmId}).\n`);
      return 0;
    } catch (error) {
      if (error instanceof RealmExistsError) {
        process.stderr.write("parley: this database already has an organization: import into an empty database (nothing was changed)\n");
        return 2;
      }
      if (error instanceof ImportFormatError) {
        process.stderr.write(`parley: ${error.message} (nothing was imported)\n`);
        return 1;
      }
      throw error;
    }
  });
}

async function migrate(): Promise<void> {
  await withServices(async () => {
    process.stdout.write("Database is up to date.\n");
  });
}

export async function main(argv: string[]): Promise<number> {
  const [command, ...args] = argv;
  try {
    switch (command) {
      case "serve":
        if (args.length > 0) throw new UsageError("serve takes no arguments");
        await serve();
        return -1; // keeps running
      case "migrate":
        await migrate();
        return 0;
      case "init":
        await init(args);
        return 0;
      case "create-user":
        await createUserCommand(args);
        return 0;
      case "api-key":
        await apiKeyCommand(args);
        return 0;
      case "import":
        return await importCommand(args);
      case "move-uploads":
        return await moveUploadsCommand(args);
      case "export":
        await exportCommand(args);
        return 0;
      case "help":
      case "--help":
      case "-h":
        process.stdout.write(HELP + "\n");
        return 0;
      default:
        throw new UsageError(command === undefined ? "no command given" : `unknown command '${command}'`);
    }
  } catch (error) {
    if (error instanceof UsageError) {
      process.stderr.write(`parley: ${error.message}\n\n${HELP}\n`);
      return 2;
    }
    if (error instanceof ConfigError || error instanceof RealmExistsError || error instanceof ApiError) {
      process.stderr.write(`parley: ${error.message}\n`);
      return 1;
    }
    // Typically the database cannot be reached: say so in one line.
    const code = (error as { code?: string }).code;
    if (code === "ECONNREFUSED" || code === "ENOTFOUND" || code === "SQLITE_CANTOPEN" || code === "28P01" || code === "3D000") {
      process.stderr.write(`parley: cannot open the database: ${(error as Error).message}\n`);
      return 1;
    }
    throw error;
  }
}

const code = await main(process.argv.slice(2));
if (code >= 0) process.exit(code);
