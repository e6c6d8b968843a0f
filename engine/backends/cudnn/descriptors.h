// cuDNN's own handles and descriptors, owned like every other GPU object (gpu::Owned, engine/gpu/runtime.h):
// freed on every path, a failed release only logged.
#pragma once

#include <cudnn.h>

#include "gpu/check.h"
#include "gpu/runtime.h"

namespace mnv2::cudnn_backend {

MNV2_GPU_OWNED_TRAITS(CudnnTraits, cudnnHandle_t, cudnnDestroy);
MNV2_GPU_OWNED_TRAITS(TensorDescTraits, cudnnTensorDescriptor_t, cudnnDestroyTensorDescriptor);
MNV2_GPU_OWNED_TRAITS(FilterDescTraits, cudnnFilterDescriptor_t, cudnnDestroyFilterDescriptor);
MNV2_GPU_OWNED_TRAITS(ConvDescTraits, cudnnConvolutionDescriptor_t, cudnnDestroyConvolutionDescriptor);
MNV2_GPU_OWNED_TRAITS(ActivationDescTraits, cudnnActivationDescriptor_t, cudnnDestroyActivationDescriptor);
MNV2_GPU_OWNED_TRAITS(PoolingDescTraits, cudnnPoolingDescriptor_t, cudnnDestroyPoolingDescriptor);
MNV2_GPU_OWNED_TRAITS(OpTensorDescTraits, cudnnOpTensorDescriptor_t, cudnnDestroyOpTensorDescriptor);

using CudnnHandle = gpu::Owned<CudnnTraits>;
using TensorDescriptor = gpu::Owned<TensorDescTraits>;
using FilterDescriptor = gpu::Owned<FilterDescTraits>;
using ConvolutionDescriptor = gpu::Owned<ConvDescTraits>;
using ActivationDescriptor = gpu::Owned<ActivationDescTraits>;
using PoolingDescriptor = gpu::Owned<PoolingDescTraits>;
using OpTensorDescriptor = gpu::Owned<OpTensorDescTraits>;

inline CudnnHandle make_cudnn_handle() {
  cudnnHandle_t h = nullptr;
  MNV2_CHECK_CUDNN(cudnnCreate(&h));
  return CudnnHandle(h);
}
inline TensorDescriptor make_tensor_descriptor() {
  cudnnTensorDescriptor_t d = nullptr;
  MNV2_CHECK_CUDNN(cudnnCreateTensorDescriptor(&d));
  return TensorDescriptor(d);
}
inline FilterDescriptor make_filter_descriptor() {
  cudnnFilterDescriptor_t d = nullptr;
  MNV2_CHECK_CUDNN(cudnnCreateFilterDescriptor(&d));
  return FilterDescriptor(d);
}
inline ConvolutionDescriptor make_convolution_descriptor() {
  cudnnConvolutionDescriptor_t d = nullptr;
  MNV2_CHECK_CUDNN(cudnnCreateConvolutionDescriptor(&d));
  return ConvolutionDescriptor(d);
}
inline ActivationDescriptor make_activation_descriptor() {
  cudnnActivationDescriptor_t d = nullptr;
  MNV2_CHECK_CUDNN(cudnnCreateActivationDescriptor(&d));
  return ActivationDescriptor(d);
}
inline PoolingDescriptor make_pooling_descriptor() {
  cudnnPoolingDescriptor_t d = nullptr;
  MNV2_CHECK_CUDNN(cudnnCreatePoolingDescriptor(&d));
  return PoolingDescriptor(d);
}
inline OpTensorDescriptor make_op_tensor_descriptor() {
  cudnnOpTensorDescriptor_t d = nullptr;
  MNV2_CHECK_CUDNN(cudnnCreateOpTensorDescriptor(&d));
  return OpTensorDescriptor(d);
}

}  // namespace mnv2::cudnn_backend
