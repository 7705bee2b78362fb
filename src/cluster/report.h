// How audit and why-pending print: an aligned table for people, JSON (stable keys) for scripts.
#pragma once

#include <ostream>
#include <string>

#include "cluster/audit.h"
#include "cluster/why_pending.h"

namespace gpunode::cluster {

void PrintAuditTable(const AuditReport& report, std::ostream& out);
// {"nodes": [...], "findings": [{id, severity, object, message, fix}], "summary": {...}}
std::string AuditJson(const AuditReport& report);

void PrintPendingTable(const PendingReport& report, std::ostream& out);
std::string PendingJson(const PendingReport& report);

}  // namespace gpunode::cluster
