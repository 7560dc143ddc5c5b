// Fixture for structure.tensor_factories_detects_host_tensors: a head that makes tensors on the host
// beside some that follow their input, one marked host on purpose, and a torch::zeros( in a comment.
#include <torch/torch.h>

torch::Tensor planted_offsets(const torch::Tensor& x) {
  const auto index = torch::TensorOptions().dtype(torch::kInt64).device(x.device());
  auto follows = torch::zeros({3}, x.options()) + torch::arange(3, index);
  auto on_device = torch::full({3}, 2.0,
                               torch::TensorOptions().device(x.device()));
  auto marked = torch::ones({3}, torch::kFloat64);  // host: the fixture's accepted host tensor
  auto host = torch::zeros({3});
  auto spanning = torch::full({3},
                              1.0, torch::kFloat64);
  auto named_cpu = torch::empty({3}, torch::TensorOptions().device(torch::kCPU));
  return x + host + follows + on_device + marked.to(x.device()) + spanning + named_cpu;
}
