import { useEffect, useState } from "react";
import { api, type Schemas } from "../api/client";
import Pager from "./Pager";

type Entry = Schemas["AuditEntryRead"];
type Action = Schemas["AuditAction"];
const PAGE = 20;
const ACTIONS: Action[] = [
  "auth.login",
  "auth.login_failed",
  "auth.password_changed",
  "api_key.created",
  "api_key.revoked",
  "user.created",
  "user.deactivated",
  "user.reactivated",
  "user.role_changed",
  "user.password_reset",
  "user.quota_changed",
  "document.deleted",
  "chat.deleted",
  "chat.restored",
];

function summary(entry: Entry): string {
  const detail = Object.entries(entry.detail)
    .map(([key, value]) => `${key}: ${Array.isArray(value) ? value.join(", ") : String(value)}`)
    .join("; ");
  return detail;
}

/** The audit log, newest first, filtered by action; read-only by design. */
export default function AuditLog({ revision }: { revision: number }) {
  const [entries, setEntries] = useState<Entry[]>([]);
  const [total, setTotal] = useState(0);
  const [skip, setSkip] = useState(0);
  const [action, setAction] = useState<Action | "">("");

  useEffect(() => {
    void api
      .GET("/api/v1/admin/audit", { params: { query: { action: action || undefined, skip, limit: PAGE } } })
      .then(({ data }) => {
        setEntries(data?.items ?? []);
        setTotal(data?.total ?? 0);
      });
  }, [action, skip, revision]);

  return (
    <>
      <label>
        Action
        <select value={action} onChange={(e) => { setAction(e.target.value as Action | ""); setSkip(0); }}>
          <option value="">all actions</option>
          {ACTIONS.map((name) => (
            <option key={name} value={name}>
              {name}
            </option>
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
