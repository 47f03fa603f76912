import { useEffect, useState } from "react";
import { api, type Schemas, type User } from "../api/client";
import DocumentsPanel from "../components/DocumentsPanel";

export default function AdminPage() {
  const [users, setUsers] = useState<User[]>([]);
  const [total, setTotal] = useState(0);
  const [usage, setUsage] = useState<Schemas["UsageSummary"] | null>(null);

  useEffect(() => {
    void api.GET("/api/v1/admin/users", { params: { query: { limit: 100 } } }).then(({ data }) => {
      setUsers(data?.items ?? []);
      setTotal(data?.total ?? 0);
    });
    void api.GET("/api/v1/admin/usage").then(({ data }) => setUsage(data ?? null));
  }, []);

  return (
    <main className="admin">
      <section aria-labelledby="usage-title" className="card">
        <h2 id="usage-title">Usage</h2>
        {usage && (
          <dl className="stats">
            <dt>Users</dt>
            <dd>{usage.users}</dd>
            <dt>Documents</dt>
            <dd>{usage.documents}</dd>
            <dt>Chats</dt>
            <dd>{usage.chats}</dd>
            <dt>Questions</dt>
            <dd>{usage.queries}</dd>
            <dt>Answers</dt>
            <dd>{usage.responses}</dd>
            <dt>Average answer time</dt>
            <dd>{usage.average_latency_ms != null ? `${Math.round(usage.average_latency_ms)} ms` : "—"}</dd>
          </dl>
        )}
      </section>
      <section aria-labelledby="shared-title" className="card">
        <h2 id="shared-title">Shared documents</h2>
        <p className="muted">Documents uploaded here are readable by every user.</p>
        <DocumentsPanel selected={[]} onSelectedChange={() => undefined} chatId={null} linkedIds={[]} onLinked={() => undefined} uploadUrl="/api/v1/admin/documents" />
      </section>
      <section aria-labelledby="users-title" className="card">
        <h2 id="users-title">Users ({total})</h2>
        <table>
          <thead>
            <tr>
              <th scope="col">Email</th>
              <th scope="col">Role</th>
              <th scope="col">Active</th>
              <th scope="col">Joined</th>
            </tr>
          </thead>
          <tbody>
            {users.map((user) => (
              <tr key={user.id}>
                <td>{user.email}</td>
                <td>{user.role}</td>
                <td>{user.is_active ? "yes" : "no"}</td>
                <td>{new Date(user.created_at).toLocaleDateString()}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </section>
    </main>
  );
}
