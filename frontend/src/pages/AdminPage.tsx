import { useQuery } from "@tanstack/react-query";
import { api } from "../api/client";
import { keys } from "../api/queries";
import AuditLog from "../components/AuditLog";
import DocumentsPanel from "../components/DocumentsPanel";
import FeedbackReview from "../components/FeedbackReview";
import UsersAdmin from "../components/UsersAdmin";

export default function AdminPage({ currentUserId }: { currentUserId: string }) {
  const usage = useQuery({
    queryKey: [...keys.admin, "usage"],
    queryFn: async () => (await api.GET("/api/v1/admin/usage")).data ?? null,
  }).data;

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
        <DocumentsPanel uploadUrl="/api/v1/admin/documents" visibility="shared" />
      </section>
      <section aria-labelledby="users-title" className="card wide">
        <h2 id="users-title">Users</h2>
        <UsersAdmin currentUserId={currentUserId} />
      </section>
      <section aria-labelledby="feedback-title" className="card wide">
        <h2 id="feedback-title">Answer feedback</h2>
        <p className="muted">What users rated, with the question, the answer and its sources: the material for judging answer quality.</p>
        <FeedbackReview />
      </section>
      <section aria-labelledby="audit-title" className="card wide">
        <h2 id="audit-title">Audit log</h2>
        <AuditLog />
      </section>
    </main>
  );
}
