"""The NVIDIA kernel driver's userspace ABI that NVDevice uses: RM escapes on /dev/nvidiactl and /dev/nvidiaN, UVM ioctls on
/dev/nvidia-uvm, the parameter structures, classes and control commands. Written from the layouts in NVIDIA's open-gpu-kernel-modules
headers of the 535 driver series (no package ships them: field order and types as there, ctypes lays them out as the C compiler does;
tests/hcq/test_nv_rm_abi.py checks every size and offset against values counted by hand from the headers). Headers:
src/nvidia/arch/nvalloc/unix/include/nv-ioctl-numbers.h, nv-ioctl.h, nv_escape.h; src/common/sdk/nvidia/inc/nvos.h,
alloc/alloc_channel.h, class/cl0080.h, cl2080.h, cl90f1.h, cla06c.h, cl9067.h, ctrl/ctrl2080/ctrl2080gpu.h, ctrl2080mc.h, ctrl/ctrla06c.h,
ctrl/ctrlc36f.h; kernel-open/nvidia-uvm/uvm_ioctl.h, uvm_linux_ioctl.h, uvm_types.h.
Some structures grew fields in later driver series (NV_CHANNEL_ALLOC_PARAMS.tpcConfigID, NV_VASPACE_ALLOCATION_PARAMETERS.pasid,
UVM_MAX_GPUS 32 -> 256), and RM checks a structure's size: NVDevice refuses another driver series by name (DRIVER_SERIES)."""
import ctypes
from ctypes import c_uint8 as u8, c_uint32 as u32, c_int32 as s32, c_uint64 as u64

DRIVER_SERIES = 535

def _struct(name:str, *fields) -> type: return type(name, (ctypes.Structure,), {"_fields_": list(fields)})

# *** ioctl numbers (nv-ioctl-numbers.h, nv_escape.h): _IOWR('F', escape, size) ***
NV_IOCTL_MAGIC, NV_IOCTL_BASE = ord("F"), 200
NV_ESC_CARD_INFO, NV_ESC_REGISTER_FD = NV_IOCTL_BASE + 0, NV_IOCTL_BASE + 1
NV_ESC_RM_ALLOC_MEMORY, NV_ESC_RM_FREE, NV_ESC_RM_CONTROL, NV_ESC_RM_ALLOC, NV_ESC_RM_MAP_MEMORY = 0x27, 0x29, 0x2A, 0x2B, 0x4E
def nv_iowr(esc:int, size:int) -> int: return 3 << 30 | size << 16 | NV_IOCTL_MAGIC << 8 | esc
def nv_escape(nr:int) -> int: return nr & 0xff  # the escape of an ioctl number (the mock's dispatch)

# *** RM parameter structures (nvos.h, nv-ioctl.h) ***
NVOS00_PARAMETERS = _struct("NVOS00_PARAMETERS", ("hRoot", u32), ("hObjectParent", u32), ("hObjectOld", u32), ("status", u32))
NVOS02_PARAMETERS = _struct("NVOS02_PARAMETERS", ("hRoot", u32), ("hObjectParent", u32), ("hObjectNew", u32), ("hClass", u32), ("flags", u32),
                            ("pMemory", u64), ("limit", u64), ("status", u32))
nv_ioctl_nvos02_parameters_with_fd = _struct("nv_ioctl_nvos02_parameters_with_fd", ("params", NVOS02_PARAMETERS), ("fd", s32))
NVOS21_PARAMETERS = _struct("NVOS21_PARAMETERS", ("hRoot", u32), ("hObjectParent", u32), ("hObjectNew", u32), ("hClass", u32),
                            ("pAllocParms", u64), ("paramsSize", u32), ("status", u32))
NVOS33_PARAMETERS = _struct("NVOS33_PARAMETERS", ("hClient", u32), ("hDevice", u32), ("hMemory", u32), ("offset", u64), ("length", u64),
                            ("pLinearAddress", u64), ("status", u32), ("flags", u32))
nv_ioctl_nvos33_parameters_with_fd = _struct("nv_ioctl_nvos33_parameters_with_fd", ("params", NVOS33_PARAMETERS), ("fd", s32))
NVOS54_PARAMETERS = _struct("NVOS54_PARAMETERS", ("hClient", u32), ("hObject", u32), ("cmd", u32), ("flags", u32), ("params", u64),
                            ("paramsSize", u32), ("status", u32))
nv_ioctl_register_fd_t = _struct("nv_ioctl_register_fd_t", ("ctl_fd", s32))

# *** classes ***
NV01_ROOT_CLIENT, NV01_DEVICE_0, NV20_SUBDEVICE_0 = 0x41, 0x80, 0x2080
NV01_MEMORY_LOCAL_USER, NV01_MEMORY_SYSTEM_OS_DESCRIPTOR = 0x40, 0x71
FERMI_VASPACE_A, FERMI_CONTEXT_SHARE_A, KEPLER_CHANNEL_GROUP_A = 0x90F1, 0x9067, 0xA06C
VOLTA_USERMODE_A, AMPERE_CHANNEL_GPFIFO_A, AMPERE_COMPUTE_A, AMPERE_DMA_COPY_A = 0xC361, 0xC56F, 0xC6C0, 0xC6B5
AMPERE_COMPUTE_B, ADA_COMPUTE_A, AMPERE_DMA_COPY_B = 0xC7C0, 0xC9C0, 0xC7B5
HOPPER_CHANNEL_GPFIFO_A, HOPPER_COMPUTE_A, HOPPER_DMA_COPY_A, HOPPER_USERMODE_A = 0xC86F, 0xCBC0, 0xC8B5, 0xC661

# *** class allocation parameters ***
NV0080_ALLOC_PARAMETERS = _struct("NV0080_ALLOC_PARAMETERS", ("deviceId", u32), ("hClientShare", u32), ("hTargetClient", u32),
                                  ("hTargetDevice", u32), ("flags", u32), ("vaSpaceSize", u64), ("vaStartInternal", u64),
                                  ("vaLimitInternal", u64), ("vaMode", u32))
NV_DEVICE_ALLOCATION_VAMODE_MULTIPLE_VASPACES = 2
NV2080_ALLOC_PARAMETERS = _struct("NV2080_ALLOC_PARAMETERS", ("subDeviceId", u32))
NV_VASPACE_ALLOCATION_PARAMETERS = _struct("NV_VASPACE_ALLOCATION_PARAMETERS", ("index", u32), ("flags", u32), ("vaSize", u64),
                                           ("vaStartInternal", u64), ("vaLimitInternal", u64), ("bigPageSize", u32), ("vaBase", u64))
NV_VASPACE_ALLOCATION_FLAGS_IS_EXTERNALLY_OWNED, NV_VASPACE_ALLOCATION_FLAGS_ENABLE_PAGE_FAULTING = 1 << 3, 1 << 6
NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS = _struct("NV_CHANNEL_GROUP_ALLOCATION_PARAMETERS", ("hObjectError", u32), ("hObjectEccError", u32),
                                                 ("hVASpace", u32), ("engineType", u32), ("bIsCallingContextVgpuPlugin", u8))
NV2080_ENGINE_TYPE_GRAPHICS = 1
NV_CTXSHARE_ALLOCATION_PARAMETERS = _struct("NV_CTXSHARE_ALLOCATION_PARAMETERS", ("hVASpace", u32), ("flags", u32), ("subctxId", u32))
NV_CTXSHARE_ALLOCATION_FLAGS_SUBCONTEXT_ASYNC = 1
NV_MEMORY_DESC_PARAMS = _struct("NV_MEMORY_DESC_PARAMS", ("base", u64), ("size", u64), ("addressSpace", u32), ("cacheAttrib", u32))
NV_MAX_SUBDEVICES = 8
NV_CHANNEL_ALLOC_PARAMS = _struct("NV_CHANNEL_ALLOC_PARAMS", ("hObjectError", u32), ("hObjectBuffer", u32), ("gpFifoOffset", u64),
  ("gpFifoEntries", u32), ("flags", u32), ("hContextShare", u32), ("hVASpace", u32), ("hUserdMemory", u32 * NV_MAX_SUBDEVICES),
  ("userdOffset", u64 * NV_MAX_SUBDEVICES), ("engineType", u32), ("cid", u32), ("subDeviceId", u32), ("hObjectEccError", u32),
  ("instanceMem", NV_MEMORY_DESC_PARAMS), ("userdMem", NV_MEMORY_DESC_PARAMS), ("ramfcMem", NV_MEMORY_DESC_PARAMS),
  ("mthdbufMem", NV_MEMORY_DESC_PARAMS), ("hPhysChannelGroup", u32), ("internalFlags", u32), ("errorNotifierMem", NV_MEMORY_DESC_PARAMS),
  ("eccErrorNotifierMem", NV_MEMORY_DESC_PARAMS), ("ProcessID", u32), ("SubProcessID", u32), ("encryptIv", u32 * 3), ("decryptIv", u32 * 3),
  ("hmacNonce", u32 * 8))
NV_MEMORY_ALLOCATION_PARAMS = _struct("NV_MEMORY_ALLOCATION_PARAMS", ("owner", u32), ("type", u32), ("flags", u32), ("width", u32),
  ("height", u32), ("pitch", s32), ("attr", u32), ("attr2", u32), ("format", u32), ("comprCovg", u32), ("zcullCovg", u32), ("rangeLo", u64),
  ("rangeHi", u64), ("size", u64), ("alignment", u64), ("offset", u64), ("limit", u64), ("address", u64), ("ctagOffset", u32),
  ("hVASpace", u32), ("internalflags", u32), ("tag", u32))
NVOS32_TYPE_IMAGE = 0
NVOS32_ALLOC_FLAGS_ALIGNMENT_FORCE, NVOS32_ALLOC_FLAGS_MAP_NOT_REQUIRED, NVOS32_ALLOC_FLAGS_PERSISTENT_VIDMEM = 1 << 8, 1 << 30, 1 << 11
NVOS32_ATTR_PHYSICALITY_CONTIGUOUS, NVOS32_ATTR_LOCATION_VIDMEM, NVOS32_ATTR_PAGE_SIZE_HUGE = 1 << 27, 0 << 25, 3 << 23
NVOS02_FLAGS_PHYSICALITY_NONCONTIGUOUS, NVOS02_FLAGS_COHERENCY_CACHED, NVOS02_FLAGS_MAPPING_NO_MAP = 1 << 4, 3 << 12, 1 << 30

# *** control commands (cmd = class << 16 | category << 8 | index) ***
NV2080_CTRL_CMD_GPU_GET_GID_INFO, NV2080_GPU_CMD_GPU_GET_GID_FLAGS_FORMAT_BINARY = 0x2080014A, 2
NV2080_CTRL_GPU_GET_GID_INFO_PARAMS = _struct("NV2080_CTRL_GPU_GET_GID_INFO_PARAMS", ("index", u32), ("flags", u32), ("length", u32),
                                              ("data", u8 * 256))
NV0080_CTRL_CMD_GPU_GET_CLASSLIST = 0x800201  # the classes the device supports (ctrl0080gpu.h); a NULL classList asks for the count
NV0080_CTRL_GPU_GET_CLASSLIST_PARAMS = _struct("NV0080_CTRL_GPU_GET_CLASSLIST_PARAMS", ("numClasses", u32), ("classList", u64))
NV2080_CTRL_CMD_MC_GET_ARCH_INFO = 0x20801701
NV2080_CTRL_MC_GET_ARCH_INFO_PARAMS = _struct("NV2080_CTRL_MC_GET_ARCH_INFO_PARAMS", ("architecture", u32), ("implementation", u32),
                                              ("revision", u32), ("subRevision", u8))
# NV2080_CTRL_MC_ARCH_INFO_ARCHITECTURE_* and the implementations that differ in SM version within one: GA100 is 0, GA102..GA107 2..7,
# GA10B (integrated) 0xB. The SM each is, from CUDA's compute capabilities: GA100 8.0, GA10x 8.6, GA10B 8.7, AD10x 8.9, GH100 9.0,
# GB100 10.0, GB20x 12.0
ARCH_GA100, ARCH_GH100, ARCH_AD100, ARCH_GB100, ARCH_GB200 = 0x170, 0x180, 0x190, 0x1A0, 0x1B0
NVA06C_CTRL_CMD_GPFIFO_SCHEDULE = 0xA06C0101
NVA06C_CTRL_GPFIFO_SCHEDULE_PARAMS = _struct("NVA06C_CTRL_GPFIFO_SCHEDULE_PARAMS", ("bEnable", u8), ("bSkipSubmit", u8))
NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN = 0xC36F0108
NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN_PARAMS = _struct("NVC36F_CTRL_CMD_GPFIFO_GET_WORK_SUBMIT_TOKEN_PARAMS", ("workSubmitToken", u32))

# *** the channel's USERD (AmpereAControlGPFifo, clc56f.h) and the usermode doorbell (clc361.h) ***
USERD_GP_GET, USERD_GP_PUT = 0x88, 0x8C
NOTIFIERS_RC = 0  # the robust-channel (error) notifier's index in a channel's error notifier memory (clc56fsw.h NVC56F_NOTIFIERS_RC)
NVC361_NOTIFY_CHANNEL_PENDING, USERMODE_SIZE = 0x90, 0x10000

# *** UVM (uvm_ioctl.h, uvm_linux_ioctl.h): the number is the command itself ***
UVM_INITIALIZE, UVM_REGISTER_GPU_VASPACE, UVM_MAP_EXTERNAL_ALLOCATION, UVM_FREE, UVM_REGISTER_GPU = 0x30000001, 25, 33, 34, 37
UVM_CREATE_EXTERNAL_RANGE = 73
UVM_MAX_GPUS = 32
NvProcessorUuid = u8 * 16
UVM_INITIALIZE_PARAMS = _struct("UVM_INITIALIZE_PARAMS", ("flags", u64), ("rmStatus", u32))
UVM_REGISTER_GPU_PARAMS = _struct("UVM_REGISTER_GPU_PARAMS", ("gpu_uuid", NvProcessorUuid), ("numaEnabled", u8), ("numaNodeId", s32),
                                  ("rmCtrlFd", s32), ("hClient", u32), ("hSmcPartRef", u32), ("rmStatus", u32))
UVM_REGISTER_GPU_VASPACE_PARAMS = _struct("UVM_REGISTER_GPU_VASPACE_PARAMS", ("gpuUuid", NvProcessorUuid), ("rmCtrlFd", s32), ("hClient", u32),
                                          ("hVaSpace", u32), ("rmStatus", u32))
UVM_CREATE_EXTERNAL_RANGE_PARAMS = _struct("UVM_CREATE_EXTERNAL_RANGE_PARAMS", ("base", u64), ("length", u64), ("rmStatus", u32))
UvmGpuMappingAttributes = _struct("UvmGpuMappingAttributes", ("gpuUuid", NvProcessorUuid), ("gpuMappingType", u32), ("gpuCachingType", u32),
                                  ("gpuFormatType", u32), ("gpuElementBits", u32), ("gpuCompressionType", u32))
UVM_MAP_EXTERNAL_ALLOCATION_PARAMS = _struct("UVM_MAP_EXTERNAL_ALLOCATION_PARAMS", ("base", u64), ("length", u64), ("offset", u64),
  ("perGpuAttributes", UvmGpuMappingAttributes * UVM_MAX_GPUS), ("gpuAttributesCount", u64), ("rmCtrlFd", s32), ("hClient", u32),
  ("hMemory", u32), ("rmStatus", u32))
UVM_FREE_PARAMS = _struct("UVM_FREE_PARAMS", ("base", u64), ("length", u64), ("rmStatus", u32))
UVM_GPU_MAPPING_TYPE_DEFAULT, UVM_GPU_CACHING_TYPE_DEFAULT = 0, 0
NV_OK, NV_ERR_NO_MEMORY = 0, 0x51  # nvstatuscodes.h
