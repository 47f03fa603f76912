import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { api, type Schemas } from "../api/client";
import { keys } from "../api/queries";
import Pager from "./Pager";

type Entry = Schemas["AuditEntryRead"];
type Action = Schemas["AuditAction"];
const PAGE = 20;
// Every action, in words. A Record over the API's own enum: an action the server adds and
// this list lacks is a type error, not a missing filter entry.
const ACTION_NAMES: Record<Action, string> = {
  "auth.login": "logged in",
  "auth.login_failed": "login failed",
  "auth.password_changed": "password changed",
  "auth.password_check_failed": "wrong password given again",
  "api_key.created": "API key created",
  "api_key.revoked": "API key revoked",
  "user.created": "user created",
  "user.linked": "linked to the directory",
  "user.deactivated": "user deactivated",
  "user.reactivated": "user reactivated",
  "user.role_changed": "role changed",
  "user.password_reset": "password reset",
  "user.quota_changed": "quota changed",
  "user.exported": "downloaded their data",
  "user.deletion_requested": "asked to delete their account",
  "user.deletion_cancelled": "kept their account",
  "user.deleted": "account deleted",
  "source.created": "source added",
  "source.changed": "source changed",
  "source.deleted": "source deleted",
  "document.deleted": "document deleted",
  "chat.deleted": "chat deleted",
  "chat.restored": "chat restored",
  "chat.shared": "chat shared by link",
  "chat.unshared": "chat link turned off",
  "collection.created": "collection created",
  "collection.deleted": "collection deleted",
  "collection.member_added": "member added",
  "collection.member_changed": "member's role changed",
  "collection.member_removed": "member removed",
  "collection.invitation_accepted": "invitation accepted",
  "collection.invitation_declined": "invitation declined",
  "collection.document_added": "document added",
  "collection.document_removed": "document removed",
  "group.created": "group created",
  "group.deleted": "group deleted",
  "group.member_added": "member added",
  "group.member_removed": "member removed",
};
const GROUPS: Record<string, string> = {
  auth: "Sign-in",
  api_key: "API keys",
  user: "Users",
  document: "Documents",
  chat: "Chats",
  collection: "Collections",
  group: "Groups",
};
const ACTIONS = Object.keys(ACTION_NAMES) as Action[];

function summary(entry: Entry): string {
  const detail = Object.entries(entry.detail)
    .map(([key, value]) => `${key}: ${Array.isArray(value) ? value.join(", ") : String(value)}`)
    .join("; ");
  return detail;
}

/** The audit log, newest first, filtered by action; read-only by design. */
export default function AuditLog() {
  const [skip, setSkip] = useState(0);
  const [action, setAction] = useState<Action | "">("");
  // One cached page per filter: a late reply for the previous filter fills its own entry, never
  // the one on screen (a plain effect showed whichever reply came last).
  const { data } = useQuery({
    queryKey: [...keys.admin, "audit", action, skip],
    placeholderData: keepPreviousData,
    queryFn: async () =>
      (await api.GET("/api/v1/admin/audit", { params: { query: { action: action || undefined, skip, limit: PAGE } } })).data ?? null,
  });
  const entries: Entry[] = data?.items ?? [];
  const total = data?.total ?? 0;

  return (
    <>
      <label>
        Action
        <select value={action} onChange={(e) => { setAction(e.target.value as Action | ""); setSkip(0); }}>
          <option value="">all actions</option>
          {Object.entries(GROUPS).map(([prefix, label]) => (
            <optgroup key={prefix} label={label}>
              {ACTIONS.filter((name) => name.startsWith(`${prefix}.`)).map((name) => (
                <option key={name} value={name}>
                  {ACTION_NAMES[name]} ({name})
                </option>
              ))}
            </optgroup>
          ))}
        </select>
      </label>
      <div className="table-scroll" tabIndex={0} role="region" aria-label="Audit log table">
        <table>
          <caption className="sr-only">Audit log</caption>
          <thead>
            <tr>
              <th scope="col">When</th>
              <th scope="col">Action</th>
              <th scope="col">By</th>
              <th scope="col">Details</th>
            </tr>
          </thead>
          <tbody>
            {entries.map((entry) => (
              <tr key={entry.id}>
                <td>{new Date(entry.created_at).toLocaleString()}</td>
                <td>{entry.action}</td>
                <td>
                  {entry.actor_email ?? "—"}
                  {entry.address && <span className="muted"> from {entry.address}</span>}
                </td>
                <td>{summary(entry)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <Pager skip={skip} limit={PAGE} total={total} onSkip={setSkip} label="Audit log pages" empty="Nothing recorded" previous="Newer" next="Older" />
    </>
  );
}
