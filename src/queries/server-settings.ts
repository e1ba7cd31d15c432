// GET /server_settings: what an unauthenticated client may learn about the
// server and its organization.
import { realmIconUrl as realmIconUrlFor } from "../domain/avatar.ts";
import { parseRealmSettings, passwordAuthEnabled } from "../domain/realm-settings.ts";
import type { Services } from "../services.ts";
import type { Realm } from "../storage/schema.ts";
import { SERVICE_FEATURE_LEVEL, SERVICE_MERGE_BASE, SERVICE_VERSION } from "../version.ts";

/** The external identity providers Zulip knows; none is configured in Parley. */
const EXTERNAL_PROVIDERS = ["github", "gitlab", "azuread", "google", "apple"] as const;

export function realmIconUrl(services: Services, realm: Pick<Realm, "id" | "icon_version">): string {
  return realmIconUrlFor(services.config.externalUrl, realm);
}


export function serverSettings(services: Services, realm: Realm, userAgent: string | undefined): Record<string, unknown> {
  const settings = parseRealmSettings(realm.settings);
  const passwordEnabled = passwordAuthEnabled(settings);
  const authenticationMethods: Record<string, boolean> = {
    password: passwordEnabled,
    dev: services.config.devMode,
    email: passwordEnabled,
    ldap: false,
    remoteuser: false,
    saml: false,
    "openid connect": false,
  };
  for (const provider of EXTERNAL_PROVIDERS) authenticationMethods[provider] = false;
  const realmUrl = services.config.externalUrl;
  return {
    authentication_methods: authenticationMethods,
    external_authentication_methods: [],
    service_feature_level: SERVICE_FEATURE_LEVEL,
    service_version: SERVICE_VERSION,
    service_merge_base: SERVICE_MERGE_BASE,
    zulip_feature_level: SERVICE_FEATURE_LEVEL,
    zulip_version: SERVICE_VERSION,
    zulip_merge_base: SERVICE_MERGE_BASE,
    push_notifications_enabled: services.config.pushServiceUrl !== undefined,
    // Zulip marks only its own test client "ZulipInvalid" as incompatible.
    is_incompatible: /^ZulipInvalid\b/.test(userAgent ?? ""),
    email_auth_enabled: passwordEnabled,
    require_email_format_usernames: true,
    realm_url: realmUrl,
    realm_uri: realmUrl,
    realm_name: realm.name,
    realm_icon: realmIconUrl(services, realm),
    realm_description: realm.rendered_description,
    // Needs spectator access and a web-public channel; Parley has no web-public channels yet.
    realm_web_public_access_enabled: false,
  };
}
