// Scheduled messages (GET/POST /scheduled_messages, PATCH/DELETE
// /scheduled_messages/{id}) and message reminders (GET/POST /reminders,
// DELETE /reminders/{id}). The rules and delivery are actions/scheduled-messages.ts.
import { createReminder, deleteScheduledRow, editScheduledMessage, scheduleMessage } from "../actions/scheduled-messages.ts";
import { clientName, topicOrSubject } from "../domain/messages.ts";
import { DeliveryType } from "../domain/scheduled-messages.ts";
import { MAX_USER_IDS } from "../domain/limits.ts";
import { check, param, type Validator } from "../http/params.ts";
import { defineRoute, type ApiRequest } from "../http/route.ts";
import { undeliveredReminders, undeliveredScheduledMessages } from "../queries/scheduled-messages.ts";

const MESSAGE_TYPES = ["direct", "private", "stream", "channel"] as const;

/** `to`: a channel ID or a list of user IDs, JSON-encoded (names and emails are not accepted here, as in Zulip). */
const channelIdOrUserIds: Validator<number | number[]> = (value, name) => (Array.isArray(value) ? check.list(check.int, { max: MAX_USER_IDS })(value, name) : check.int(value, name));

const kindOf = (type: (typeof MESSAGE_TYPES)[number]) => (type === "stream" || type === "channel" ? "channel" : "direct");

const requestClient = (request: ApiRequest, client: string | undefined) => clientName(client, request.http.headers["user-agent"]);

export const scheduledMessageRoutes = [
  defineRoute({
    method: "GET",
    path: "/scheduled_messages",
    auth: "api",
    params: {},
    handler: async (request) => ({ scheduled_messages: await undeliveredScheduledMessages(request.services.storage.db, request.user.id) }),
  }),

  defineRoute({
    method: "POST",
    path: "/scheduled_messages",
    auth: "api",
    params: {
      type: param.choice(MESSAGE_TYPES).required(),
      to: param.json(channelIdOrUserIds).required(),
      content: param.string().required(),
      topic: param.string(),
      subject: param.string(),
      scheduled_delivery_timestamp: param.int().required(),
      read_by_sender: param.bool(),
      client: param.string(),
    },
    handler: async (request, p) => {
      const id = await scheduleMessage(request.services, request.realm, request.user, {
        kind: kindOf(p.type),
        to: p.to,
        content: p.content,
        topic: topicOrSubject(p.topic, p.subject),
        deliverAt: p.scheduled_delivery_timestamp,
        readBySender: p.read_by_sender,
        clientName: requestClient(request, p.client),
      });
      return { scheduled_message_id: id };
    },
  }),

  defineRoute({
    method: "PATCH",
    path: "/scheduled_messages/:scheduled_message_id",
    auth: "api",
    params: {
      scheduled_message_id: param.int().required(),
      type: param.choice(MESSAGE_TYPES),
      to: param.json(channelIdOrUserIds),
      content: param.string(),
      topic: param.string(),
      subject: param.string(),
      scheduled_delivery_timestamp: param.int(),
      client: param.string(),
    },
    handler: async (request, p) => {
      await editScheduledMessage(request.services, request.realm, request.user, p.scheduled_message_id, {
        kind: p.type === undefined ? undefined : kindOf(p.type),
        to: p.to,
        content: p.content,
        topic: topicOrSubject(p.topic, p.subject),
        deliverAt: p.scheduled_delivery_timestamp,
        clientName: requestClient(request, p.client),
      });
    },
  }),

  defineRoute({
    method: "DELETE",
    path: "/scheduled_messages/:scheduled_message_id",
    auth: "api",
    params: { scheduled_message_id: param.int().required() },
    handler: async (request, p) => {
      await deleteScheduledRow(request.services, request.realm, request.user, DeliveryType.SEND_LATER, p.scheduled_message_id);
    },
  }),

  defineRoute({
    method: "GET",
    path: "/reminders",
    auth: "api",
    params: {},
    handler: async (request) => ({ reminders: await undeliveredReminders(request.services.storage.db, request.user.id) }),
  }),

  defineRoute({
    method: "POST",
    path: "/reminders",
    auth: "api",
    params: {
      message_id: param.int().required(),
      scheduled_delivery_timestamp: param.int().required(),
      note: param.string(),
      client: param.string(),
    },
    handler: async (request, p) => {
      const id = await createReminder(request.services, request.realm, request.user, {
        messageId: p.message_id,
        deliverAt: p.scheduled_delivery_timestamp,
        note: p.note,
        clientName: requestClient(request, p.client),
      });
      return { reminder_id: id };
    },
  }),

  defineRoute({
    method: "DELETE",
    path: "/reminders/:reminder_id",
    auth: "api",
    params: { reminder_id: param.int().required() },
    handler: async (request, p) => {
      await deleteScheduledRow(request.services, request.realm, request.user, DeliveryType.REMIND, p.reminder_id);
    },
  }),
];
