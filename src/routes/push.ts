// Mobile push registration: POST /mobile_push/register (E2EE devices), and the
// deprecated token endpoints POST/DELETE /users/me/apns_device_token (alias
// /users/me/ios_device_token) and
// POST/DELETE /users/me/android_gcm_reg_id. Humans only, each for their own
// devices (Zulip's @human_users_only).
import { addLegacyToken, registerPushDevice, removeLegacyToken, sendTestPushNotification } from "../actions/push-devices.ts";
import { checkApnsAppId, checkBase64Field, checkLegacyToken, E2EE_TOKEN_KINDS, TokenKind } from "../domain/push.ts";
import { Param, param } from "../http/params.ts";
import { defineRoute } from "../http/route.ts";

/** A string parameter that must be RFC 4648 standard base64. */
function base64Param(): Param<string> {
  return new Param((raw, name) => checkBase64Field(raw, name), "optional");
}

const APNS_TOKEN_PATHS = ["/users/me/apns_device_token", "/users/me/ios_device_token"] as const;

export const pushRoutes = [
  defineRoute({
    method: "POST",
    path: "/mobile_push/register",
    auth: "api",
    params: {
      token_kind: param.choice(E2EE_TOKEN_KINDS).required(),
      push_account_id: param.int().required(),
      push_public_key: base64Param().required(),
      bouncer_public_key: param.string().required(),
      encrypted_push_registration: base64Param().required(),
    },
    handler: async ({ services, realm, user }, p) => {
      await registerPushDevice(services, realm, user, {
        tokenKind: p.token_kind,
        pushAccountId: p.push_account_id,
        pushPublicKey: p.push_public_key,
        bouncerPublicKey: p.bouncer_public_key,
        encryptedPushRegistration: p.encrypted_push_registration,
      });
    },
  }),

  // Zulip's route is /users/me/apns_device_token (what the mobile app calls);
  // /users/me/ios_device_token is the contract's name for the same endpoint.
  ...APNS_TOKEN_PATHS.flatMap((path) => [
    defineRoute({
      method: "POST",
      path,
      auth: "api",
      params: { token: param.string().required(), appid: param.string().required() },
      handler: async ({ services, realm, user }, p) => {
        checkLegacyToken(p.token, TokenKind.APNS);
        await addLegacyToken(services, realm, user, TokenKind.APNS, p.token, checkApnsAppId(p.appid));
      },
    }),
    defineRoute({
      method: "DELETE",
      path,
      auth: "api",
      params: { token: param.string().required() },
      handler: async ({ services, realm, user }, p) => {
        checkLegacyToken(p.token, TokenKind.APNS);
        await removeLegacyToken(services, realm, user, TokenKind.APNS, p.token);
      },
    }),
  ]),

  defineRoute({
    method: "POST",
    path: "/users/me/android_gcm_reg_id",
    auth: "api",
    params: { token: param.string().required() },
    handler: async ({ services, realm, user }, p) => {
      checkLegacyToken(p.token, TokenKind.FCM);
      await addLegacyToken(services, realm, user, TokenKind.FCM, p.token, null);
    },
  }),

  defineRoute({
    method: "DELETE",
    path: "/users/me/android_gcm_reg_id",
    auth: "api",
    params: { token: param.string().required() },
    handler: async ({ services, realm, user }, p) => {
      checkLegacyToken(p.token, TokenKind.FCM);
      await removeLegacyToken(services, realm, user, TokenKind.FCM, p.token);
    },
  }),

  defineRoute({
    method: "POST",
    path: "/mobile_push/test_notification",
    auth: "api",
    params: { token: param.string() },
    handler: async ({ services, realm, user }, p) => {
      await sendTestPushNotification(services, realm, user, p.token);
    },
  }),
];
