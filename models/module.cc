#include "kolo/models.h"

namespace kolo::models {

Parameter& Module::add_parameter(const std::string& name, std::vector<int64_t> shape) {
  auto p = std::make_unique<Parameter>();
  p->name = qualified(name);
  p->value = Tensor(shape);
  p->grad = Tensor(std::move(shape));
  params_.push_back(std::move(p));
  return *params_.back();
}

Tensor& Module::add_buffer(const std::string& name, Tensor initial) {
  buffers_.emplace_back(name, std::make_unique<Tensor>(std::move(initial)));
  return *buffers_.back().second;
}

void Module::rename(const std::string& prefix) {
  // Parameter names are absolute; re-prefix them (and the children's) under the new name.
  const std::string old_prefix = prefix_;
  prefix_ = prefix;
  for (auto& p : params_) {
    const std::string local = old_prefix.empty() ? p->name : p->name.substr(old_prefix.size() + 1);
    p->name = qualified(local);
  }
  for (Child& c : children_) c.module->rename(qualified(c.name));
}

void Module::collect(std::vector<Parameter*>& params, std::vector<std::pair<std::string, Tensor*>>& buffers) {
  for (auto& p : params_) params.push_back(p.get());
  for (auto& [name, t] : buffers_) buffers.emplace_back(qualified(name), t.get());
  for (Child& c : children_) c.module->collect(params, buffers);
}

std::vector<Parameter*> Module::parameters() {
  std::vector<Parameter*> params;
  std::vector<std::pair<std::string, Tensor*>> buffers;
  collect(params, buffers);
  return params;
}

std::vector<std::pair<std::string, Tensor*>> Module::buffers() {
  std::vector<Parameter*> params;
  std::vector<std::pair<std::string, Tensor*>> buffers;
  collect(params, buffers);
  return buffers;
}

int64_t Module::parameter_count() {
  int64_t n = 0;
  for (Parameter* p : parameters()) n += p->value.numel();
  return n;
}

Parameter* Module::find_parameter(const std::string& name) {
  for (Parameter* p : parameters())
    if (p->name == name) return p;
  return nullptr;
}

Tensor* Module::find_buffer(const std::string& name) {
  for (auto& [n, t] : buffers())
    if (n == name) return t;
  return nullptr;
}

std::vector<Module*> Module::modules() {
  std::vector<Module*> all{this};
  for (Child& c : children_) {
    std::vector<Module*> below = c.module->modules();
    all.insert(all.end(), below.begin(), below.end());
  }
  return all;
}

void Module::train(bool on) {
  training_ = on;
  on_train(on);
  for (Child& c : children_) c.module->train(on);
}

void Module::zero_grad() {
  for (Parameter* p : parameters()) p->grad.fill(0.0f);
}

void Module::set_grad_ready_hook(GradReadyHook hook) {
  hook_ = std::move(hook);
  for (Child& c : children_) c.module->set_grad_ready_hook(hook_);
}

void Module::grad_ready(Parameter& p) {
  if (hook_) hook_(p);
}

void Sequential::set_needs_input_grad(bool on) {
  Module::set_needs_input_grad(on);
  if (!layers_.empty()) layers_.front()->set_needs_input_grad(on);
}

Tensor Sequential::forward(const Tensor& input) {
  Tensor x = input;
  for (Module* layer : layers_) x = layer->forward(x);
  return x;
}

Tensor Sequential::backward(const Tensor& grad_output) {
  Tensor g = grad_output;
  for (auto it = layers_.rbegin(); it != layers_.rend(); ++it) g = (*it)->backward(g);
  return g;
}

}  // namespace kolo::models
