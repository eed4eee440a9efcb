# Each folder's library exposes its own headers and nothing else of the tree:
# its users include them as "<name>/<file>" through a root of their own that
# holds one link, <build>/include/<target>/<name> -> the folder. A target sees
# the roots of the libraries it links, so an include that runs against the
# layer order (core -> kernels -> resources -> models -> config -> engine ->
# bench, serve -> apps) names a folder its target cannot see and fails to
# compile. tests/check_layers.py checks the same order over every source file,
# relative includes too.
set(MSTAR_INCLUDE_ROOT ${PROJECT_BINARY_DIR}/include)

function(mstar_public_headers target folder name)
  set(root ${MSTAR_INCLUDE_ROOT}/${target})
  file(MAKE_DIRECTORY ${root})
  file(CREATE_LINK ${folder} ${root}/${name} SYMBOLIC)
  target_include_directories(${target} PUBLIC $<BUILD_INTERFACE:${root}>)
endfunction()
