// validate(): string classes (a generic walk over the binary schema) and the
// invariants of pt2format/_validate.py (over the generated accessors), so the
// C++ reader refuses exactly what the Python reader refuses, with the same
// error class (SPEC.md §7).
//
// The parts: validate_internal.h lists which file checks what.
#include "pt2f/validate.h"

#include <string>

#include "pt2format_limits.h"
#include "pt2format_rules.h"
#include "validate_internal.h"

namespace pt2f {
namespace validation {

void Validator::run() {
  const auto *fv = p_->format_version();
  if (!fv) invalid("required field is missing", "format_version");
  if (fv->major() > 1 || fv->major() == 0)
    fail(ErrorKind::Version, "format version is not readable by this reader", "format_version", "major 1",
         num(fv->major()));
  if (p_->required_features() & ~kKnownFeatures)
    fail(ErrorKind::UnsupportedFeature, "file requires unknown features", "required_features", "bits within 0xf",
         num(p_->required_features()));
  rules::check_field_rules(p_);  // every pt2f_index/_required/_keys field, generated; the checks below rely on them
  check_data();
  check_extra_files();
  n_tensors_ = len(p_->tensors());
  for (uint32_t i = 0; i < len(p_->programs()); ++i) check_program(p_->programs()->Get(i), at("programs", i));
  for (uint32_t i = 0; i < len(p_->operators()); ++i) {
    const auto *op = p_->operators()->Get(i);
    for (int g = 0; g < 2; ++g) {
      const auto *params = g ? op->returns() : op->parameters();
      for (uint32_t j = 0; j < len(params); ++j)
        if (params->Get(j)->default_value())
          check_value(params->Get(j)->default_value(), 0, false,
                      at("operators", i) + (g ? ".returns" : ".parameters") + "[" + num(j) + "].default_value");
    }
  }
}

void Validator::check_extra_files() {
  const auto *files = p_->extra_files();
  for (uint32_t i = 0; i < len(files); ++i) {  // sorted by name: pt2f_keys, generated
    const auto *e = files->Get(i);
    const std::string path = at("extra_files", i);
    const std::string n = s(e->name());
    if (n.empty() || n.size() > limits::kMaxExtraFileNameBytes)
      invalid("extra file name must be 1 to " + num(limits::kMaxExtraFileNameBytes) + " bytes of UTF-8", path + ".name",
              "", num(n.size()));
    for (unsigned char c : n)
      if (c < 0x20 || c == 0x7f) invalid("extra file name must not contain control characters", path + ".name");
  }
}

}  // namespace validation

void validate(const File &file) {
  try {
    validation::check_string_classes(file);
    validation::check_shard_ids(file);
    validation::check_label(file);
    validation::Validator(file).run();
  } catch (const Error &e) {
    throw e.with_context(file.path()).with_versions(file.header().format_major, file.header().format_minor);
  }
}

}  // namespace pt2f
