// Reporting a message to the moderators: POST /messages/{message_id}/report.
import { reportMessage } from "../actions/message-reports.ts";
import { MAX_REPORT_MESSAGE_EXPLANATION_LENGTH, REPORT_TYPES, type ReportType } from "../domain/message-reports.ts";
import { badRequest } from "../errors.ts";
import { Param, param } from "../http/params.ts";
import { defineRoute } from "../http/route.ts";

/** typed_endpoint's check_string_in_validator: a value_error, reported as Zulip words it. */
const reportType = new Param<ReportType>((raw, name) => {
  if (!(REPORT_TYPES as string[]).includes(raw)) throw badRequest(`Invalid ${name}: Value error, Not in the list of possible values`);
  return raw as ReportType;
}, "optional");

/** StringConstraints(max_length=1000): not stripped, counted in code points. */
const description = new Param<string>((raw, name) => {
  const value = param.string().convert(raw, name);
  if ([...value].length > MAX_REPORT_MESSAGE_EXPLANATION_LENGTH) throw badRequest(`${name} is too long (limit: ${MAX_REPORT_MESSAGE_EXPLANATION_LENGTH} characters)`);
  return value;
}, "optional");

export const messageReportRoutes = [
  defineRoute({
    method: "POST",
    path: "/messages/:message_id/report",
    auth: "api",
    params: {
      message_id: param.int().required(),
      report_type: reportType.required(),
      description: description.default(""),
    },
    handler: async (request, p) => {
      await reportMessage(request.services, request.realm, request.user, { messageId: p.message_id, reportType: p.report_type, description: p.description });
    },
  }),
];
