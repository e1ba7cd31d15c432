// Pure rules about bot accounts (Zulip's zerver/lib/users.py and
// zerver/lib/bot_storage.py): which bots a user may create, short names and
// bot addresses, service interfaces, and the bot storage size limit.
import { badRequest, insufficientPermission } from "../errors.ts";
import { isRefusedHost, type AddressPolicy } from "./external-content.ts";
import { isAdmin } from "./roles.ts";
import { BotType } from "./roles.ts";

export { BotType };

/** Service.interface: how an outgoing webhook talks (Zulip's Service.GENERIC / SLACK). */
export const ServiceInterface = { GENERIC: 1, SLACK: 2 } as const;
export const ALLOWED_INTERFACE_TYPES: readonly number[] = [ServiceInterface.GENERIC, ServiceInterface.SLACK];

/**
 * Zulip's settings.USER_STATE_SIZE_LIMIT: what one bot may keep in its
 * storage, counted as key plus value lengths in characters (code points, as
 * Python's len).
 */
export const BOT_STORAGE_SIZE_LIMIT = 10_000_000;

/** The length Python's len() gives a string: its code points. */
export function codePointLength(text: string): number {
  let n = 0;
  for (const _ of text) n++;
  return n;
}

/** Zulip's check_short_name: stripped; blank is refused. */
export function checkShortName(raw: string): string {
  const shortName = raw.trim();
  if (shortName.length === 0) throw badRequest("Bad name or username");
  return shortName;
}

/** A bot's address: `<short_name>-bot@<realm_bot_domain>`. */
export function botEmail(shortName: string, botDomain: string): string {
  return `${shortName}-bot@${botDomain}`;
}

/**
 * Zulip's check_bot_creation_policy: administrators may create any bot;
 * members of can_create_bots_group any bot; members of
 * can_create_write_only_bots_group only incoming-webhook bots (which can
 * only send messages); nobody else any.
 */
export function checkBotCreationPolicy(role: number, botType: number, mayCreateAll: boolean, mayCreateWriteOnly: boolean): void {
  if (isAdmin(role) || mayCreateAll) return;
  if (mayCreateWriteOnly && botType === BotType.INCOMING_WEBHOOK) return;
  throw insufficientPermission();
}

/**
 * Zulip's check_valid_bot_type against UserProfile.allowed_bot_types:
 * generic bots need the right to create every kind of bot; embedded bots
 * need EMBEDDED_BOTS_ENABLED, which Parley has off (it runs no embedded bots),
 * as Zulip's production default.
 */
export function checkValidBotType(role: number, botType: number, mayCreateAll: boolean): void {
  const allowed: number[] = [BotType.INCOMING_WEBHOOK, BotType.OUTGOING_WEBHOOK];
  if (isAdmin(role) || mayCreateAll) allowed.push(BotType.GENERIC);
  if (!allowed.includes(botType)) throw badRequest("Invalid bot type");
}

/** Zulip's check_valid_interface_type. */
export function checkInterfaceType(interfaceType: number): void {
  if (!ALLOWED_INTERFACE_TYPES.includes(interfaceType)) throw badRequest("Invalid interface type");
}

/** Zulip's check_url validator (Django's URLValidator): an http(s) or ftp(s) URL with a host. */
export function checkUrl(value: string, name: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw badRequest(`${name} is not a URL`);
  }
  if (!["http:", "https:", "ftp:", "ftps:"].includes(url.protocol) || url.hostname === "" || /\s/.test(value)) {
    throw badRequest(`${name} is not a URL`);
  }
  return value;
}

/**
 * An outgoing-webhook bot's endpoint, when the bot is created or edited:
 * http(s) only (what can be delivered to), and not an internal address the
 * operator has not allowed, as far as the URL alone tells (an address literal
 * or a localhost name). A name is checked again each time it is connected to.
 */
export function checkServiceUrl(value: string, name: string, policy: AddressPolicy): void {
  const url = new URL(checkUrl(value, name));
  if (url.protocol !== "http:" && url.protocol !== "https:") throw badRequest(`${name} is not an http or https URL`);
  if (isRefusedHost(url.hostname, policy)) throw badRequest(`${name} is for a private or disallowed network`);
}
